// @cluster: webhook replies cross from a subscription's topic to the bus's webhook topic, two slots
// Issue 40.13: webhook secrets per subscription (`webhookSecret`, over the worker-wide one), rotation
// (a list: the first signs, a verifier accepts any), the worker-wide secret from FLOTILLA_WEBHOOK_SECRET
// (and from flotilla-worker's --webhook-secret, through setDefaultWebhookSecret); strict webhook options.
// Issue 40.12: the bus takes the client's connection options.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ErrorCodes } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { afterEach, describe, expect, it } from "vitest";
import {
  Bus,
  busWorker,
  SIGNATURE_HEADER,
  signWebhook,
  subscribe,
  TIMESTAMP_HEADER,
  verifyWebhook,
  WEBHOOK_SUBSCRIPTION,
  WEBHOOK_TOPIC,
} from "../src/index.ts";
import { useBus } from "./helpers.ts";

const t = useBus("bus-webhook-secrets");
const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
});

interface Received {
  path: string;
  signature: string;
  timestamp: string;
  body: string;
}

/** A webhook receiver keeping every request; resolves with its base URL. */
async function receiver(received: Received[]): Promise<string> {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      received.push({
        path: req.url ?? "",
        signature: String(req.headers[SIGNATURE_HEADER] ?? ""),
        timestamp: String(req.headers[TIMESTAMP_HEADER] ?? ""),
        body,
      });
      res.writeHead(200).end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Which of `secrets` signed the request (by name), or "none". */
function signer(r: Received, secrets: Record<string, string>): string {
  return Object.entries(secrets).find(([, s]) => verifyWebhook(s, r))?.[0] ?? "none";
}

const WORKER = "worker-wide-secret";
const SUB_NEW = "subscription-secret-new";
const SUB_OLD = "subscription-secret-old";
const secrets = { worker: WORKER, subNew: SUB_NEW, subOld: SUB_OLD };
const fast = { backoff: { delayMs: 50, maxDelayMs: 100, jitter: 0 } };

describe("webhook secrets", () => {
  it("verifyWebhook accepts a request signed with any secret of a list (a rotation), and only those", () => {
    const body = '{"a":1}';
    const now = Date.now();
    const request = (secret: string) => ({ signature: signWebhook(secret, now, body), timestamp: String(now), body });
    expect(verifyWebhook([SUB_NEW, SUB_OLD], request(SUB_OLD))).toBe(true);
    expect(verifyWebhook([SUB_NEW, SUB_OLD], request(SUB_NEW))).toBe(true);
    expect(verifyWebhook([SUB_NEW, SUB_OLD], request(WORKER))).toBe(false);
    expect(verifyWebhook([], request(WORKER))).toBe(false);
    // A list signs with its first secret: the current one.
    expect(signWebhook([SUB_NEW, SUB_OLD], now, body)).toBe(signWebhook(SUB_NEW, now, body));
  });

  it("a subscription's webhookSecret signs its webhooks (the first of its list); the others sign with the worker's", async () => {
    const received: Received[] = [];
    const base = await receiver(received);
    const own = subscribe("ws.own", () => "own", { name: "own", webhookSecret: [SUB_NEW, SUB_OLD] });
    const plain = subscribe("ws.plain", () => "plain", { name: "plain" });
    await t.serve({ subscriptions: [own, plain], webhooks: { secret: WORKER, ...fast } });
    await t.bus.publish("ws.own", 1, { webhook: `${base}/own` });
    await t.bus.publish("ws.plain", 1, { webhook: `${base}/plain` });
    await waitFor(() => received.length === 2, { timeoutMs: 10_000 });
    const by = Object.fromEntries(received.map((r) => [r.path, signer(r, secrets)]));
    expect(by).toEqual({ "/own": "subNew", "/plain": "worker" });
    // The secret never reaches Redis: the queued delivery says only that the subscription has its own.
    const deliveries = await t.bus.inspect(WEBHOOK_TOPIC);
    expect(JSON.stringify(deliveries)).not.toContain(SUB_NEW);
    expect(deliveries.map((d) => ("payload" in d ? (d.payload as { ownSecret?: boolean }).ownSecret : undefined)).sort()).toEqual([true, undefined]);
  });

  it("a worker that delivers webhooks but does not serve the subscription never signs its webhook with another secret: it fails, retried elsewhere", async () => {
    const received: Received[] = [];
    const base = await receiver(received);
    // The subscription is served here, but this worker delivers no webhooks…
    await t.serve({ subscriptions: [subscribe("ws.elsewhere", () => "x", { name: "own", webhookSecret: SUB_NEW })] }, "serves-the-subscription");
    // …and the only worker that does does not know its secret.
    await t.serve({ subscriptions: [], webhooks: { secret: WORKER, maxRetries: 0 } }, "delivers-webhooks");
    await t.bus.publish("ws.elsewhere", 1, { webhook: `${base}/x` });
    await waitFor(async () => (await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION)).length === 1, { timeoutMs: 10_000 });
    const [dead] = await t.bus.deadLetters.list(WEBHOOK_TOPIC, WEBHOOK_SUBSCRIPTION);
    expect(dead?.reason).toBe("RETRIES_EXHAUSTED");
    expect(dead?.error).toMatchObject({ code: ErrorCodes.WEBHOOK_FAILED, message: expect.stringContaining("signs with its own webhookSecret") });
    expect(received).toEqual([]);
  });

  it("the worker-wide secret: the option, else flotilla-worker's (setDefaultWebhookSecret), else FLOTILLA_WEBHOOK_SECRET", async () => {
    const received: Received[] = [];
    const base = await receiver(received);
    const before = process.env.FLOTILLA_WEBHOOK_SECRET;
    process.env.FLOTILLA_WEBHOOK_SECRET = ` ${SUB_OLD}, ${SUB_NEW} `;
    try {
      const fromEnv = busWorker({ subscriptions: [subscribe("ws.env", () => 1, { name: "env" })], webhooks: fast });
      const fromFlag = busWorker({ subscriptions: [subscribe("ws.flag", () => 1, { name: "flag" })], webhooks: fast });
      expect(fromFlag.setDefaultWebhookSecret([WORKER])).toBe(true);
      const inCode = busWorker({ subscriptions: [], webhooks: { secret: SUB_NEW } });
      expect(inCode.setDefaultWebhookSecret(WORKER)).toBe(false); // the option wins: the caller says so
      expect(busWorker({ subscriptions: [], webhooks: false }).setDefaultWebhookSecret(WORKER)).toBe(false);
      // One worker at a time delivers, so each request is signed by the worker that took it.
      const env = await t.env.worker({ bus: fromEnv, workerId: "env" });
      await t.bus.publish("ws.env", 1, { webhook: `${base}/env` });
      await waitFor(() => received.length === 1, { timeoutMs: 10_000 });
      await env.stop();
      await t.env.worker({ bus: fromFlag, workerId: "flag" });
      await t.bus.publish("ws.flag", 1, { webhook: `${base}/flag` });
      await waitFor(() => received.length === 2, { timeoutMs: 10_000 });
    } finally {
      if (before === undefined) delete process.env.FLOTILLA_WEBHOOK_SECRET;
      else process.env.FLOTILLA_WEBHOOK_SECRET = before;
    }
    expect(Object.fromEntries(received.map((r) => [r.path, signer(r, secrets)]))).toEqual({ "/env": "subOld", "/flag": "worker" });
  });

  it("refuses what it would otherwise ignore: a misspelt webhook option, an empty secret, an empty list", () => {
    expect(() => busWorker({ subscriptions: [], webhooks: { secrett: "x" } as never })).toThrow(
      expect.objectContaining({ code: "VALIDATION_ERROR", field: "webhooks.secrett" }),
    );
    expect(() => busWorker({ subscriptions: [], webhooks: { secret: [] } })).toThrow(expect.objectContaining({ field: "webhooks.secret" }));
    expect(() => subscribe("ws.t", () => 1, { name: "n", webhookSecret: "" })).toThrow(expect.objectContaining({ field: "webhookSecret" }));
    expect(() => subscribe("ws.t", () => 1, { name: "n", webhookSecret: [] })).toThrow(expect.objectContaining({ field: "webhookSecret" }));
    expect(() => busWorker({ subscriptions: [] }).setDefaultWebhookSecret([])).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR" }));
  });
});

describe("the bus's connection options", () => {
  it("takes the client's (redis, prefix, connectTimeoutMs), and refuses a key it does not know, naming it", async () => {
    const bus = new Bus({ redis: t.env.connection, prefix: t.env.prefix, connectTimeoutMs: 2_000 });
    try {
      expect(await bus.publish("ws.conn", 1)).toMatch(/^\d+-\d+$/);
    } finally {
      await bus.close();
    }
    expect(() => new Bus({ redis: t.env.connection, conectTimeoutMs: 1 } as never)).toThrow(
      expect.objectContaining({ code: "VALIDATION_ERROR", field: "conectTimeoutMs" }),
    );
    expect(() => new Bus({ connectTimeoutMs: 0 })).toThrow(expect.objectContaining({ field: "connectTimeoutMs" }));
    expect(() => new Bus({ redis: "http://127.0.0.1:6379" })).toThrow(expect.objectContaining({ field: "redis" }));
  });

  it("a closed bus refuses further calls with CLOSED", async () => {
    const bus = new Bus({ redis: t.env.connection, prefix: t.env.prefix });
    await bus.close();
    await expect(bus.publish("ws.conn", 1)).rejects.toMatchObject({ code: ErrorCodes.CLOSED });
    await expect(bus.request("ws.conn", 1)).rejects.toMatchObject({ code: ErrorCodes.CLOSED });
  });
});
