// @cluster: request and reply across two topics' slots
import { createServer, type RequestListener, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCodes, type JsonValue, UnrecoverableError } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { afterEach, describe, expect, it } from "vitest";
import { busWorker, SIGNATURE_HEADER, subscribe, TIMESTAMP_HEADER, verifyWebhook, WEBHOOK_SUBSCRIPTION, WEBHOOK_TOPIC } from "../src/index.ts";
import { useBus } from "./helpers.ts";

const t = useBus("bus-replies");
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    // A receiver that never answers keeps its connections open: close() alone would wait on them.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

/** A webhook receiver on 127.0.0.1 (a port of its own), closed after the test; resolves with its base URL. */
async function listen(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const double = subscribe("math.double", (event) => ({ twice: (event.payload as { n: number }).n * 2 }), { name: "doubler" });

describe("replies", () => {
  it("request() publishes and resolves with the correlated reply; concurrent requests each get their own", async () => {
    await t.serve({ subscriptions: [double] });
    const replies = await Promise.all([1, 2, 3].map((n) => t.bus.request("math.double", { n }, { timeoutMs: 10_000 })));
    expect(replies.map((r) => r.payload)).toEqual([{ twice: 2 }, { twice: 4 }, { twice: 6 }]);
    // A reply names the event it answers and who answered.
    const [asked] = await t.bus.inspect("math.double", { limit: 1 });
    expect(replies[2]).toMatchObject({ causationId: asked!.id });
    expect(replies[2]!.source).toBeTruthy();
  });

  it("request() rejects with the error of an event that failed for good, and with WAIT_TIMEOUT when nobody answers", async () => {
    await t.serve({ subscriptions: [subscribe("strict", () => Promise.reject(new UnrecoverableError("refused")), { name: "h" })] });
    await expect(t.bus.request("strict", {}, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.UNRECOVERABLE });
    await expect(t.bus.request("nobody.listens", {}, { timeoutMs: 300 })).rejects.toMatchObject({ code: ErrorCodes.WAIT_TIMEOUT });
  });

  it("a result nested deeper than consumers read cannot be replied: the delivery fails for good (VALIDATION_ERROR) and request() rejects with it", async () => {
    let deep: JsonValue = 0;
    for (let i = 0; i < 200; i++) deep = [deep];
    const result = deep;
    await t.serve({ subscriptions: [subscribe("too.deep", () => result, { name: "h" })] });
    await expect(t.bus.request("too.deep", {}, { timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.VALIDATION });
    expect((await t.bus.deadLetters.list("too.deep", "h"))[0]).toMatchObject({ reason: ErrorCodes.VALIDATION, attempts: 1 });
  });

  it("replyTo publishes the result on another topic with the same correlationId; ctx.publish chains events caused by this one", async () => {
    await t.serve({
      subscriptions: [
        double,
        subscribe(
          "chain.start",
          async (event, ctx) => {
            await ctx.publish("chain.next", { from: event.id });
            return null;
          },
          { name: "chainer" },
        ),
        subscribe("results", t.counting("results"), { name: "sink", from: "start" }),
      ],
    });
    const asked = await t.bus.publish("math.double", { n: 21 }, { replyTo: "results", correlationId: "order-7" });
    await waitFor(async () => (await t.bus.inspect("results")).length === 1, { timeoutMs: 10_000 });
    const [reply] = await t.bus.inspect("results");
    expect(reply).toMatchObject({ payload: { twice: 42 }, correlationId: "order-7", causationId: asked });
    const started = await t.bus.publish("chain.start", {}, { correlationId: "flow-1" });
    await waitFor(async () => (await t.bus.inspect("chain.next")).length === 1, { timeoutMs: 10_000 });
    expect((await t.bus.inspect("chain.next"))[0]).toMatchObject({ payload: { from: started }, causationId: started, correlationId: "flow-1" });
  });

  it("a webhook reply is POSTed, retried with backoff after two failures, and signed: the receiver verifies the HMAC", async () => {
    const secret = "s3cret";
    const received: Array<{ status: number; verified: boolean; forged: boolean; body: unknown }> = [];
    const base = await listen((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        const headers = { signature: req.headers[SIGNATURE_HEADER] as string, timestamp: req.headers[TIMESTAMP_HEADER] as string };
        const status = received.length < 2 ? 503 : 200;
        received.push({
          status,
          verified: verifyWebhook(secret, { ...headers, body }),
          forged: verifyWebhook("another secret", { ...headers, body }) || verifyWebhook(secret, { ...headers, body: `${body} ` }),
          body: JSON.parse(body),
        });
        res.writeHead(status).end();
      });
    });
    const url = `${base}/hook`;
    await t.env.worker({ bus: busWorker({ subscriptions: [double], webhooks: { secret, backoff: { delayMs: 100, maxDelayMs: 200, jitter: 0 } } }) });
    const id = await t.bus.publish("math.double", { n: 5 }, { webhook: url, correlationId: "w-1" });
    await waitFor(() => received.length === 3, { timeoutMs: 15_000 });
    expect(received.map((r) => [r.status, r.verified, r.forged])).toEqual([
      [503, true, false],
      [503, true, false],
      [200, true, false],
    ]);
    expect(received[2]!.body).toEqual({ topic: "math.double", event: id, subscription: "doubler", correlationId: "w-1", result: { twice: 10 } });
    // The delivery was kept in Redis (the webhook topic's group), retried twice, settled once.
    await waitFor(async () => (await t.bus.groups(WEBHOOK_TOPIC))[0]?.counts.acked === 1, { timeoutMs: 5000 });
    expect((await t.bus.groups(WEBHOOK_TOPIC))[0]).toMatchObject({ name: WEBHOOK_SUBSCRIPTION, pending: 0, counts: { retried: 2, acked: 1 } });
  });

  it("a webhook to a host not among allowedHosts is dead-lettered without a request", async () => {
    let hits = 0;
    const base = await listen((_req, res) => {
      hits++;
      res.writeHead(200).end();
    });
    const port = new URL(base).port;
    await t.env.worker({ bus: busWorker({ subscriptions: [double], webhooks: { allowedHosts: [`localhost:${port}`] } }) });
    await t.bus.publish("math.double", { n: 1 }, { webhook: `http://127.0.0.1:${port}/internal` });
    await t.bus.publish("math.double", { n: 2 }, { webhook: `http://localhost:${port}/allowed` });
    await waitFor(async () => (await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION)).length === 1, { timeoutMs: 10_000 });
    await waitFor(() => hits === 1, { timeoutMs: 10_000 });
    const [dead] = await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION);
    expect(dead).toMatchObject({ reason: ErrorCodes.WEBHOOK_FAILED, attempts: 1 });
    expect(dead!.error?.message).toContain("allowedHosts");
  });

  it("a webhook answering 4xx is not retried: the delivery goes to the webhook dead letters", async () => {
    let hits = 0;
    const url = `${await listen((_req, res) => {
      hits++;
      res.writeHead(404).end();
    })}/gone`;
    await t.env.worker({ bus: busWorker({ subscriptions: [double], webhooks: {} }) });
    await t.bus.publish("math.double", { n: 1 }, { webhook: url });
    await waitFor(async () => (await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION)).length === 1, { timeoutMs: 10_000 });
    const [dead] = await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION);
    expect(dead).toMatchObject({ reason: ErrorCodes.WEBHOOK_FAILED, attempts: 1 });
    expect(hits).toBe(1);
  });

  it("a webhook receiver that accepts the connection but never answers: each POST times out and is retried, then dead-lettered; other webhooks keep flowing meanwhile", async () => {
    const silentAt: number[] = [];
    const silent = await listen(() => {
      silentAt.push(Date.now());
      // Never answers: the request stays open until the worker gives up on it.
    });
    const answeredAt: number[] = [];
    const good = await listen((_req, res) => {
      answeredAt.push(Date.now());
      res.writeHead(200).end();
    });
    // One webhook at a time: a POST without an end would hold the only slot, but only for its timeout;
    // its retries wait in Redis (1.5 s each), not in the slot.
    await t.env.worker({
      bus: busWorker({
        subscriptions: [double],
        webhooks: { concurrency: 1, timeoutMs: 300, maxRetries: 2, backoff: { delayMs: 1500, maxDelayMs: 1500, jitter: 0 } },
      }),
    });
    await t.bus.publish("math.double", { n: 1 }, { webhook: `${silent}/hook` });
    await waitFor(() => silentAt.length === 1, { timeoutMs: 10_000 });
    await t.bus.publishMany([2, 3, 4].map((n) => ({ topic: "math.double", payload: { n }, options: { webhook: `${good}/hook` } })));
    await waitFor(() => answeredAt.length === 3, { timeoutMs: 10_000 });
    // The doubler itself never waited on the POST: its four events were all handled.
    await waitFor(async () => (await t.bus.groups("math.double"))[0]?.counts.acked === 4, { timeoutMs: 5000 });
    await waitFor(async () => (await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION)).length === 1, { timeoutMs: 15_000 });
    expect(silentAt).toHaveLength(3);
    // All three answered before the silent receiver's last attempt.
    expect(Math.max(...answeredAt)).toBeLessThan(silentAt[2]!);
    const [dead] = await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION);
    expect(dead).toMatchObject({ reason: "RETRIES_EXHAUSTED", attempts: 3, error: { code: ErrorCodes.WEBHOOK_FAILED } });
    expect(dead!.error?.message).toMatch(/could not be reached.*timeout/i);
    expect((await t.bus.groups(WEBHOOK_TOPIC))[0]).toMatchObject({ pending: 0, counts: { acked: 3, retried: 2, dead: 1 } });
  }, 40_000);
});
