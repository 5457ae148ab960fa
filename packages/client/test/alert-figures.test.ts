// An alert that fires keeps its figures current for readers: `fleet.alerts()` (the CLI, the gateway,
// the dashboard) shows its message and value as of the rules' last round, not as they were when it
// started firing; the recent events keep what was sent. Once nothing fires, the figures are gone.
// @cluster: the alert stream and its figures, read together from the {fleet} slot
import { Agent } from "@flotilla/agent";
import { createKeys } from "@flotilla/core";
import { AlertManager, redisStreamSink } from "@flotilla/metrics";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";

describe("alert figures", () => {
  const env = useFlotilla("alert-figures");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("readers see a firing alert's message and value as of the last round; the events keep what was sent; resolved, nothing stays", async () => {
    const manager = new AlertManager({
      redis: env.redis,
      prefix: env.prefix,
      queues: ["af-q"],
      thresholds: { depthWarning: 2, depthCritical: 1000, noWorkerForMs: 3_600_000 },
      intervalMs: 20_000,
      sinks: [redisStreamSink(env.redis, { prefix: env.prefix })],
    });
    managers.push(manager);
    const client = env.client();
    const echo = new Agent({ name: "echo", model: "scripted:x" });
    const submit = (n: number) => client.submitMany(Array.from({ length: n }, (_, i) => ({ agent: echo, input: i, options: { queue: "af-q" } })));
    // Nothing fires yet: no figures are kept.
    await manager.evaluate(Date.now());
    expect(await env.redis.exists(env.keys.alertsNow())).toBe(0);

    await submit(3);
    const t0 = Date.now();
    expect((await manager.evaluate(t0)).map((e) => e.rule)).toEqual(["queue_depth_warning", "no_live_worker"]);
    const depthOf = async () => (await client.fleet.alerts()).firing.find((e) => e.rule === "queue_depth_warning")!;
    expect(await depthOf()).toMatchObject({ value: 3, message: '3 tasks waiting in "af-q" (over 2)', at: t0 });

    // The backlog grows: nothing is sent again (no repeat yet), but readers see the figures of this round.
    await submit(4);
    expect(await manager.evaluate(t0 + 1000)).toEqual([]);
    expect(await depthOf()).toMatchObject({ value: 7, threshold: 2, message: '7 tasks waiting in "af-q" (over 2)', since: t0, at: t0 });
    const { events } = await client.fleet.alerts();
    expect(events.find((e) => e.rule === "queue_depth_warning")).toMatchObject({ value: 3, message: '3 tasks waiting in "af-q" (over 2)' });
    // Good for three rounds: a manager that stops writing leaves no figures behind for long.
    const ttl = await env.redis.pttl(env.keys.alertsNow());
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);

    await env.worker({ queues: ["af-q"] });
    await waitFor(async () => (await client.fleet.queueDepth("af-q")).waiting === 0, { timeoutMs: 20_000, what: "af-q drained" });
    const resolved = await manager.evaluate(t0 + 2000);
    expect(resolved.map((e) => `${e.state}:${e.rule}`).sort()).toEqual(["resolved:no_live_worker", "resolved:queue_depth_warning"]);
    expect((await client.fleet.alerts()).firing).toEqual([]);
    expect(await env.redis.exists(env.keys.alertsNow())).toBe(0);
  });

  it("figures older than the stream's latest event of the alert are not applied (an alert that fired again since)", async () => {
    const prefix = `${env.prefix}:older`;
    const client = env.client({ prefix });
    const keys = createKeys(prefix);
    const event = { id: "r:*", rule: "r", severity: "warning", state: "firing", queue: "*", message: "fresh", value: 2, threshold: 1, since: 5000, at: 5000 };
    await env.redis.xadd(keys.alerts(), "*", "event", JSON.stringify(event));
    await env.redis.set(keys.alertsNow(), JSON.stringify({ "r:*": { message: "stale", value: 9, threshold: 1, at: 4000 } }), "PX", 60_000);
    expect((await client.fleet.alerts()).firing).toEqual([event]);
    await env.redis.set(keys.alertsNow(), JSON.stringify({ "r:*": { message: "newer", value: 3, threshold: 1, at: 6000 } }), "PX", 60_000);
    expect((await client.fleet.alerts()).firing).toEqual([{ ...event, message: "newer", value: 3 }]);
    await env.redis.del(keys.alerts(), keys.alertsNow());
  });
});
