// GET /v1/events: the fleet's lifecycle over Server-Sent Events, for the dashboard and any language —
// tasks and workers as they change; a token limited to some queues sees only those and no runs.
// @cluster: the fleet's feed over SSE: channels of every queue's slot
import type { WatchEvent } from "@flotilla/client";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { type SseMessage, sseMessages, useGateway } from "./support.ts";

const ADMIN = "live-admin-token-0001";
const LIMITED = "live-limited-token-01";
const TOKENS = [
  { token: ADMIN, role: "admin" as const, queues: "*" as const },
  { token: LIMITED, role: "read" as const, queues: ["live-a"] },
];

/** Opens the feed and reads it in the background until `stop()`. */
async function follow(url: string, token: string, query = "") {
  const controller = new AbortController();
  const res = await fetch(`${url}/v1/events${query}`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal });
  const messages: SseMessage[] = [];
  const reading = (async () => {
    for await (const m of sseMessages(res)) messages.push(m);
  })().catch(() => {});
  const events = () => messages.filter((m) => m.event).map((m) => ({ ...(JSON.parse(m.data!) as WatchEvent), sse: m.event }));
  return {
    res,
    messages,
    events,
    until: (pred: (e: WatchEvent) => boolean, what: string) => waitFor(() => events().some(pred), { timeoutMs: 10_000, what }),
    stop: async () => {
      controller.abort();
      await reading;
    },
  };
}

describe("GET /v1/events", () => {
  const env = useFlotilla("gateway-live");
  const gateways = useGateway(env);

  it("streams tasks submitted, started, finished and workers joining and leaving, each as event: <type>", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const feed = await follow(url, ADMIN);
    expect(feed.res.status).toBe(200);
    expect(feed.res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    // The feed is live once the `: connected` comment is in.
    await waitFor(() => feed.messages.some((m) => m.comment === "connected"));

    const worker = await env.worker({ queues: ["live-a"], workerId: "live-worker" });
    const id = await env.submit(scripted("live"), "x", { queue: "live-a" });
    await feed.until((e) => e.type === "task.finished" && e.taskId === id, "task.finished");
    await feed.until((e) => e.type === "task.submitted" && e.taskId === id, "task.submitted");
    await feed.until((e) => e.type === "worker.joined" && e.workerId === "live-worker", "worker.joined");
    await env.stopWorkers({ workers: [worker] });
    await feed.until((e) => e.type === "worker.left" && e.workerId === "live-worker", "worker.left");
    const mine = feed.events().filter((e) => "taskId" in e && e.taskId === id);
    expect(mine.map((e) => e.sse)).toEqual(mine.map((e) => e.type));
    expect(mine.find((e) => e.type === "task.finished")).toMatchObject({ status: "COMPLETED", queue: "live-a", attempt: 1 });
    await feed.stop();
  });

  it("a token limited to some queues: their tasks and workers only; another queue is a 403", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const limited = await follow(url, LIMITED);
    const admin = await follow(url, ADMIN);
    await waitFor(() => limited.messages.some((m) => m.comment === "connected") && admin.messages.some((m) => m.comment === "connected"));

    const bWorker = await env.worker({ queues: ["live-b"], workerId: "live-b-worker" });
    await env.worker({ queues: ["live-a"], workerId: "live-a-worker" });
    const other = await env.submit(scripted("b"), "x", { queue: "live-b" });
    const ours = await env.submit(scripted("a"), "x", { queue: "live-a" });
    await limited.until((e) => e.type === "task.finished" && e.taskId === ours, "our task");
    await limited.until((e) => e.type === "worker.joined" && e.workerId === "live-a-worker", "our worker");
    // What the admin sees of the other queue has arrived by now: the limited feed got none of it.
    await admin.until((e) => e.type === "task.finished" && e.taskId === other, "the other queue's task");
    await admin.until((e) => e.type === "worker.joined" && e.workerId === "live-b-worker", "the other queue's worker");
    await env.stopWorkers({ workers: [bWorker] });
    await admin.until((e) => e.type === "worker.left" && e.workerId === "live-b-worker", "the other queue's worker leaving");
    expect(limited.events().filter((e) => ("queue" in e && e.queue !== "live-a") || ("workerId" in e && e.workerId === "live-b-worker"))).toEqual([]);
    await limited.stop();
    await admin.stop();

    const refused = await fetch(`${url}/v1/events?queue=live-b`, { headers: { authorization: `Bearer ${LIMITED}` } });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ error: { code: "FORBIDDEN" } });
    const anonymous = await fetch(`${url}/v1/events`);
    expect(anonymous.status).toBe(401);
  });

  it("many streams share one feed: each gets every event, and the gateway closes with streams open", async () => {
    const running = await gateways.start({ tokens: TOKENS });
    const feeds = await Promise.all([1, 2, 3].map(() => follow(running.url, ADMIN)));
    await waitFor(() => feeds.every((f) => f.messages.some((m) => m.comment === "connected")));
    await env.worker({ queues: ["live-c"] });
    const id = await env.submit(scripted("c"), "x", { queue: "live-c" });
    for (const f of feeds) await f.until((e) => e.type === "task.finished" && e.taskId === id, "each stream");
    await running.gateway.close();
    for (const f of feeds) await f.stop();
  });
});
