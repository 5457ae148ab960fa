// @cluster: alert rules over every queue's state, across slots
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Agent } from "@flotilla/agent";
import { createKeys } from "@flotilla/core";
import { type AlertEvent, AlertManager, redisStreamSink, webhookSink } from "@flotilla/metrics";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { TaskFailedError } from "../src/index.ts";

/** A local webhook receiver that fails the first `failFirst` requests. */
async function webhookReceiver(failFirst: number) {
  const received: AlertEvent[] = [];
  let requests = 0;
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (d: Buffer) => {
      body += d.toString();
    });
    req.on("end", () => {
      requests++;
      if (requests <= failFirst) {
        res.writeHead(500).end();
        return;
      }
      received.push(JSON.parse(body) as AlertEvent);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/alerts`,
    received,
    requests: () => requests,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

const summary = (events: AlertEvent[]) => events.map((e) => `${e.state}:${e.rule}`).sort();

describe("alerts against real queue states in Redis", () => {
  const env = useFlotilla("alerts");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("fires when tasks wait with no worker, once, repeats after the quiet period, and resolves when a worker drains them", async () => {
    const hook = await webhookReceiver(1);
    const seen: AlertEvent[] = [];
    const manager = new AlertManager({
      redis: env.redis,
      prefix: env.prefix,
      queues: ["stalled"],
      thresholds: { depthWarning: 2, noWorkerForMs: 0 },
      repeatIntervalMs: 60_000,
      sinks: [(e) => void seen.push(e), redisStreamSink(env.redis, { prefix: env.prefix }), webhookSink(hook.url, { backoffMs: 10 })],
    });
    managers.push(manager);
    const client = env.client();
    const echo = new Agent({ name: "echo", model: "scripted:x" });
    const handles = await client.submitMany([1, 2, 3].map((i) => ({ agent: echo, input: i, options: { queue: "stalled" } })));
    const t0 = Date.now();
    // No worker at all in this prefix: the fleet-wide rule fires too.
    expect(summary(await manager.evaluate(t0))).toEqual(["firing:no_live_worker", "firing:no_worker_alive", "firing:queue_depth_warning"]);
    expect(seen.find((e) => e.rule === "no_worker_alive")).toMatchObject({ id: "no_worker_alive:*", queue: "*", severity: "critical", value: 0 });
    expect(seen.find((e) => e.rule === "queue_depth_warning")).toMatchObject({ severity: "warning", queue: "stalled", value: 3, threshold: 2 });
    expect(seen.find((e) => e.rule === "no_live_worker")).toMatchObject({ severity: "critical", value: 0 });
    // Still true a moment later: nothing is sent again…
    expect(await manager.evaluate(t0 + 1000)).toEqual([]);
    // …until the quiet period has passed.
    expect(summary(await manager.evaluate(t0 + 61_000))).toEqual(["firing:no_live_worker", "firing:no_worker_alive", "firing:queue_depth_warning"]);
    expect(manager.active.map((e) => e.rule).sort()).toEqual(["no_live_worker", "no_worker_alive", "queue_depth_warning"]);

    await env.worker({ queues: ["stalled"] });
    for (const h of handles) await h.result();
    expect(summary(await manager.evaluate(t0 + 62_000))).toEqual(["resolved:no_live_worker", "resolved:no_worker_alive", "resolved:queue_depth_warning"]);
    expect(manager.active).toEqual([]);

    // Every event went to every sink: the Redis stream (for other processes) and the webhook,
    // which refused the first POST and got it on the retry.
    const stream = await env.redis.xrange(createKeys(env.prefix).alerts(), "-", "+");
    expect(stream.map(([, f]) => JSON.parse(f[1]!) as AlertEvent).map((e) => `${e.state}:${e.rule}`)).toEqual(seen.map((e) => `${e.state}:${e.rule}`));
    expect(hook.received.map((e) => `${e.state}:${e.rule}`)).toEqual(seen.map((e) => `${e.state}:${e.rule}`));
    expect(hook.requests()).toBe(seen.length + 1);
    await hook.close();
  });

  it("fires on a burst of failures over the window, and resolves once the window has passed", async () => {
    await env.worker({ queues: ["burst"] });
    const client = env.client();
    const broken = new Agent({ name: "broken", model: "scripted:x", options: { scripted: { failWith: "boom" } } });
    const echo = new Agent({ name: "echo", model: "scripted:x" });
    const failing = await client.submitMany(Array.from({ length: 6 }, (_, i) => ({ agent: broken, input: i, options: { queue: "burst" } })));
    const fine = await client.submitMany(Array.from({ length: 4 }, (_, i) => ({ agent: echo, input: i, options: { queue: "burst" } })));
    for (const h of failing) await expect(h.result()).rejects.toBeInstanceOf(TaskFailedError);
    for (const h of fine) await h.result();
    const seen: AlertEvent[] = [];
    const manager = new AlertManager({ redis: env.redis, prefix: env.prefix, queues: ["burst"], windowMs: 60_000, sinks: [(e) => void seen.push(e)] });
    managers.push(manager);
    const now = Date.now();
    expect(summary(await manager.evaluate(now))).toEqual(["firing:failure_rate"]);
    expect(seen[0]).toMatchObject({ queue: "burst", value: 0.6, threshold: 0.1, severity: "warning" });
    expect(seen[0]!.message).toMatch(/60 %.*6 of 10/);
    // Two minutes on, the failures have left the one-minute window.
    expect(summary(await manager.evaluate(now + 120_000))).toEqual(["resolved:failure_rate"]);
  });
});

describe("alerts: no worker alive at all", () => {
  const env = useFlotilla("alerts-none");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("no_worker_alive fires with every queue empty once no worker has been alive for 30 s, and resolves when a worker joins", async () => {
    const seen: AlertEvent[] = [];
    const manager = new AlertManager({ redis: env.redis, prefix: env.prefix, queues: ["empty"], sinks: [(e) => void seen.push(e)] });
    managers.push(manager);
    const gone = await env.worker({ queues: ["empty"] });
    const t0 = Date.now();
    expect(summary(await manager.evaluate(t0))).toEqual([]);
    await gone.stop();
    // A restart is shorter than the grace: nothing yet…
    expect(summary(await manager.evaluate(t0 + 1000))).toEqual([]);
    expect(summary(await manager.evaluate(t0 + 30_000))).toEqual([]);
    // …30 s after it was first seen, it fires, dated from then.
    expect(summary(await manager.evaluate(t0 + 31_000))).toEqual(["firing:no_worker_alive"]);
    expect(seen[0]).toMatchObject({ since: t0 + 1000, at: t0 + 31_000 });
    expect(seen[0]!.message).toMatch(/no worker is alive: tasks submitted now will wait/);
    await env.worker({ queues: ["other"] });
    expect(summary(await manager.evaluate(t0 + 32_000))).toEqual(["resolved:no_worker_alive"]);
  });
});

describe("alerts: a restarted manager", () => {
  const env = useFlotilla("alerts-resume");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("resume: a restarted manager neither repeats what still fires nor forgets to resolve what cleared", async () => {
    const stream = redisStreamSink(env.redis, { prefix: env.prefix });
    const options = { redis: env.redis, prefix: env.prefix, queues: ["r"], resume: true, thresholds: { noWorkerForMs: 0 } };
    const first: AlertEvent[] = [];
    const before = new AlertManager({ ...options, sinks: [(e) => void first.push(e), stream] });
    managers.push(before);
    expect(summary(await before.evaluate())).toEqual(["firing:no_worker_alive"]);
    await before.stop();
    // Restarted while it still fires: nothing sent.
    const again = new AlertManager({ ...options, sinks: [stream] });
    managers.push(again);
    expect(await again.evaluate()).toEqual([]);
    expect(again.active.map((e) => e.id)).toEqual(["no_worker_alive:*"]);
    await again.stop();
    // Restarted after it cleared: sent resolved, with the time it started firing.
    const started = await env.worker({ queues: ["r"] });
    const third = new AlertManager({ ...options, sinks: [stream] });
    managers.push(third);
    const resolved = await third.evaluate();
    expect(summary(resolved)).toEqual(["resolved:no_worker_alive"]);
    expect(resolved[0]!.since).toBe(first[0]!.since);
    await started.stop();
  });
});

describe("alerts: managers sharing a prefix", () => {
  const env = useFlotilla("alerts-exclusive");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("exclusive: of two managers one evaluates and sends; the other takes over, resuming, when it stops", async () => {
    const prefix = env.prefix;
    const a: AlertEvent[] = [];
    const b: AlertEvent[] = [];
    const options = { redis: env.redis, prefix, queues: ["x"], exclusive: true, resume: true, intervalMs: 60_000, thresholds: { noWorkerForMs: 0 } };
    const ma = new AlertManager({ ...options, sinks: [(e) => void a.push(e), redisStreamSink(env.redis, { prefix })] });
    const mb = new AlertManager({ ...options, sinks: [(e) => void b.push(e), redisStreamSink(env.redis, { prefix })] });
    managers.push(ma, mb);
    expect(summary(await ma.evaluate())).toEqual(["firing:no_worker_alive"]);
    expect(await mb.evaluate()).toEqual([]);
    expect([ma.leader, mb.leader]).toEqual([true, false]);
    expect(await env.redis.pttl(createKeys(prefix).alertsLease())).toBeGreaterThan(150_000);
    await ma.stop();
    // b leads now, and knows the alert fires: it does not send it again.
    expect(await mb.evaluate()).toEqual([]);
    expect(mb.leader).toBe(true);
    expect(b).toEqual([]);
    expect(mb.active.map((e) => e.id)).toEqual(["no_worker_alive:*"]);
    // a stands by, then leads again once b stops: it resumes again, so nothing is sent twice.
    expect(await ma.evaluate()).toEqual([]);
    expect(ma.leader).toBe(false);
    await mb.stop();
    expect(await ma.evaluate()).toEqual([]);
    expect(ma.leader).toBe(true);
    expect(a.map((e) => e.state)).toEqual(["firing"]);
    await ma.stop();
    expect(await env.redis.exists(createKeys(prefix).alertsLease())).toBe(0);
  });
});

describe("alerts: a blip", () => {
  const env = useFlotilla("alerts-blip");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("a blip shorter than the grace sends nothing, and the grace starts again after it", async () => {
    const seen: AlertEvent[] = [];
    const manager = new AlertManager({ redis: env.redis, prefix: env.prefix, queues: ["b"], sinks: [(e) => void seen.push(e)] });
    managers.push(manager);
    const t0 = Date.now();
    expect(await manager.evaluate(t0)).toEqual([]);
    const worker = await env.worker({ queues: ["b"] });
    expect(await manager.evaluate(t0 + 20_000)).toEqual([]);
    await worker.stop();
    expect(await manager.evaluate(t0 + 40_000)).toEqual([]);
    expect(seen).toEqual([]);
    expect(summary(await manager.evaluate(t0 + 70_000))).toEqual(["firing:no_worker_alive"]);
  });
});
