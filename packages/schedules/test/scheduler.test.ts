// @cluster: schedules and their ticks across slots
import { setTimeout as sleep } from "node:timers/promises";
import { DEFAULT_RETENTION, ErrorCodes, LifecycleError } from "@flotilla/core";
import { recordingLogger, testRedis, waitFor } from "@flotilla/testing";
import type { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_TICKS_PER_ROUND, Scheduler, type SchedulerOptions } from "../src/index.ts";
import { GatedTaskStore, template, useSchedules } from "./helpers.ts";

const t = useSchedules("schedules-scheduler");
const started: Scheduler[] = [];
const connections: Redis[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((s) => s.stop()));
  await Promise.all(connections.splice(0).map((c) => c.quit()));
});

/** A scheduler on the test's prefix (stopped after the test). */
function scheduler(over: Partial<SchedulerOptions> = {}): Scheduler {
  const s = new Scheduler({ redis: t.redis, keys: t.keys, tasks: t.tasks, workerId: "w1", ...over });
  started.push(s);
  return s;
}

/** A scheduler with a connection and a task store of its own: another worker process, as far as Redis can tell. */
function otherWorker(workerId: string, over: Partial<SchedulerOptions> = {}): { scheduler: Scheduler; tasks: GatedTaskStore } {
  const redis = testRedis();
  connections.push(redis);
  const tasks = new GatedTaskStore(redis, t.keys, DEFAULT_RETENTION);
  return { scheduler: scheduler({ redis, tasks, workerId, ...over }), tasks };
}

const tickOf = (name: string) => Number(name.slice(name.lastIndexOf(":") + 1));

/** The schedule's tasks' ticks, oldest first, checking each task is the one its tick names. */
async function firedTicks(id: string, queue = "sched"): Promise<number[]> {
  const names = (await t.taskNames(queue)).filter((n) => n.startsWith(`schedule:${id}:`));
  return names.map(tickOf).sort((a, b) => a - b);
}

/**
 * Runs one round of `s` that stops inside createMany, before creating its tasks (a worker stalled
 * mid-round, its lease held), while `meanwhile` runs; returns what the round fired.
 */
async function roundAround(s: Scheduler, meanwhile: () => Promise<unknown>): Promise<number> {
  const gate = t.tasks.close();
  const round = s.fireDue();
  await gate.entered;
  await meanwhile();
  gate.open();
  return round;
}

/** Consecutive ticks of an interval: no gap, no repeat. */
function expectConsecutive(ticks: readonly number[], every: number): void {
  ticks.forEach((tick, i) => {
    if (i > 0) expect(tick - ticks[i - 1]!).toBe(every);
  });
}

describe("Scheduler", () => {
  it("fires an every-second schedule once per tick, each task named by its schedule and tick", async () => {
    await t.schedules.create({ id: "beat", every: 1000, overlap: "allow" }, template());
    const { createdAt } = (await t.schedules.get("beat"))!;
    const s = scheduler();
    s.start();
    await waitFor(async () => ((await t.schedules.get("beat"))?.fired ?? 0) >= 3, { timeoutMs: 15_000 });
    await s.stop();
    const info = (await t.schedules.get("beat"))!;
    const ticks = await firedTicks("beat");
    expect(ticks).toHaveLength(info.fired);
    expect(ticks[0]).toBe(createdAt + 1000);
    expectConsecutive(ticks, 1000);
    expect(info).toMatchObject({ lastTickAt: ticks.at(-1), lastTaskId: `sched/schedule:beat:${ticks.at(-1)}`, lastFiredBy: "w1", skipped: 0, missed: 0 });
    const [task] = await t.tasks.getMany([`sched/schedule:beat:${ticks[0]}`]);
    expect(task).toMatchObject({
      status: "PENDING",
      agent: "echo",
      metadata: { team: "ops", schedule: "beat", scheduledFor: ticks[0], firedBy: "w1" },
    });
    // Never before its tick (on Redis's clock).
    expect(task!.createdAt).toBeGreaterThanOrEqual(ticks[0]!);
    // The queue is registered for listing across queues.
    expect(await t.redis.sismember(t.keys.queues(), "sched")).toBe(1);
  });

  it("two schedulers racing on the same ticks, their leases lapsing mid-round, create one task per tick and count each once", async () => {
    await t.schedules.create({ id: "race", every: 1000, overlap: "allow" }, template());
    // Rounds slower than their leases: each scheduler takes over the other's ticks while it is still creating them.
    const a = otherWorker("a", { leaseMs: 100, pollMs: 50 });
    const b = otherWorker("b", { leaseMs: 100, pollMs: 50 });
    const slow = (tasks: GatedTaskStore) => {
      const create = tasks.createMany.bind(tasks);
      tasks.createMany = async (...args) => {
        await sleep(250);
        return create(...args);
      };
    };
    slow(a.tasks);
    slow(b.tasks);
    a.scheduler.start();
    b.scheduler.start();
    await waitFor(async () => ((await t.schedules.get("race"))?.fired ?? 0) >= 4, { timeoutMs: 20_000 });
    await Promise.all([a.scheduler.stop(), b.scheduler.stop()]);
    // An overtaken round may have created ticks it could not record: one more round, once the leases
    // lapsed, records every tick up to now, those included.
    await sleep(150);
    await scheduler({ workerId: "final" }).fireDue();
    const info = (await t.schedules.get("race"))!;
    const ticks = await firedTicks("race");
    expect(ticks).toHaveLength(info.fired);
    expectConsecutive(ticks, 1000);
    expect(info.skipped).toBe(0);
    // The race did happen: some tick was created by both.
    const both = a.tasks.attempted.filter((id) => b.tasks.attempted.includes(id));
    expect(both.length).toBeGreaterThan(0);
  });

  it("a round holds its schedules under a lease: another scheduler takes nothing meanwhile", async () => {
    await t.schedules.create({ id: "held", every: 60_000, overlap: "allow" }, template());
    await t.rewind("held", 60_000);
    const b = otherWorker("b");
    const fired = await roundAround(scheduler({ workerId: "a" }), async () => expect(await b.scheduler.fireDue()).toBe(0));
    expect(fired).toBe(1);
    expect(b.tasks.attempted).toEqual([]);
  });

  it("a stale round (its lease lapsed and another worker recorded the ticks) changes nothing", async () => {
    await t.schedules.create({ id: "stale", every: 60_000, overlap: "allow", catchupWindowMs: 600_000 }, template());
    const from = await t.rewind("stale", 120_000);
    const b = otherWorker("b");
    let recorded: Record<string, string> = {};
    let score: string | null = null;
    const fired = await roundAround(scheduler({ workerId: "a", leaseMs: 100 }), async () => {
      await sleep(150);
      // a's lease lapsed: b takes the same ticks, fires and records them.
      expect(await b.scheduler.fireDue()).toBe(2);
      recorded = await t.redis.hgetall(t.keys.schedule("stale"));
      score = await t.redis.zscore(t.keys.schedulesDue(), "stale");
    });
    // a created the same two tasks (the same ids: nothing new) and its record was refused.
    expect(fired).toBe(0);
    expect(t.tasks.attempted).toEqual(b.tasks.attempted);
    expect(await t.redis.hgetall(t.keys.schedule("stale"))).toEqual(recorded);
    expect(await t.redis.zscore(t.keys.schedulesDue(), "stale")).toBe(score);
    expect(await firedTicks("stale")).toEqual([from, from + 60_000]);
    expect(await t.schedules.get("stale")).toMatchObject({ fired: 2, lastFiredBy: "b" });
  });

  it("a round that took a schedule deleted meanwhile does not bring it back", async () => {
    await t.schedules.create({ id: "doomed", every: 60_000, overlap: "allow" }, template());
    await t.rewind("doomed", 60_000);
    expect(await roundAround(scheduler(), async () => expect(await t.schedules.delete("doomed")).toBe(true))).toBe(0);
    expect(await t.redis.exists(t.keys.schedule("doomed"))).toBe(0);
    expect(await t.redis.zscore(t.keys.schedulesDue(), "doomed")).toBeNull();
  });

  it("a round that took a schedule paused meanwhile is recorded, and the schedule stays paused", async () => {
    await t.schedules.create({ id: "hush", every: 60_000, overlap: "allow" }, template());
    await t.rewind("hush", 60_000);
    expect(await roundAround(scheduler(), async () => expect(await t.schedules.pause("hush")).toBe(true))).toBe(1);
    expect(await t.schedules.get("hush")).toMatchObject({ paused: true, fired: 1 });
    expect(await t.redis.zscore(t.keys.schedulesDue(), "hush")).toBe("inf");
  });

  it('overlap "skip": ticks are skipped while the previous task has not ended, and fire again once it has', async () => {
    await t.schedules.create({ id: "one-at-a-time", every: 60_000, catchupWindowMs: 600_000 }, template());
    const s = scheduler();
    // Three ticks due: the first fires, the other two wait on its task (PENDING: no worker runs it).
    const first = await t.rewind("one-at-a-time", 180_000);
    expect(await s.fireDue()).toBe(1);
    expect(await t.schedules.get("one-at-a-time")).toMatchObject({ fired: 1, skipped: 2, lastTickAt: first });
    // Two more ticks due, the task still PENDING: both skipped.
    await t.rewind("one-at-a-time", 120_000);
    expect(await s.fireDue()).toBe(0);
    expect(await t.schedules.get("one-at-a-time")).toMatchObject({ fired: 1, skipped: 4 });
    // Still RUNNING: skipped.
    const taskId = `sched/schedule:one-at-a-time:${first}`;
    const run = await t.tasks.start(taskId, "w1");
    await t.rewind("one-at-a-time", 60_000);
    expect(await s.fireDue()).toBe(0);
    // Ended: the next tick fires.
    expect(run.kind).toBe("run");
    await t.tasks.finish(taskId, { attempt: (run as { attempt: number }).attempt, status: "COMPLETED", agent: "echo", result: "done" });
    const again = await t.rewind("one-at-a-time", 60_000);
    expect(await s.fireDue()).toBe(1);
    expect(await t.schedules.get("one-at-a-time")).toMatchObject({ fired: 2, skipped: 5, lastTickAt: again });
    expect(await firedTicks("one-at-a-time")).toEqual([first, again]);
  });

  it('overlap "allow": every due tick fires, each its own task', async () => {
    await t.schedules.create({ id: "all", every: 60_000, overlap: "allow", catchupWindowMs: 600_000 }, template());
    const first = await t.rewind("all", 180_000);
    expect(await scheduler().fireDue()).toBe(3);
    expect(await t.schedules.get("all")).toMatchObject({ fired: 3, skipped: 0, missed: 0, lastTickAt: first + 120_000 });
    expect(await firedTicks("all")).toEqual([first, first + 60_000, first + 120_000]);
  });

  it("catch-up: ticks older than the window are counted as missed and not fired; those within it fire in order", async () => {
    await t.schedules.create({ id: "late", every: 1000, overlap: "allow", catchupWindowMs: 60_000 }, template());
    const from = await t.rewind("late", 300_000);
    const before = await t.now();
    const fired = await scheduler().fireDue();
    const after = await t.now();
    const info = (await t.schedules.get("late"))!;
    const ticks = await firedTicks("late");
    expect(ticks).toHaveLength(fired);
    expect(info.fired).toBe(fired);
    expectConsecutive(ticks, 1000);
    // What was missed is exactly what came before the first fired tick.
    expect(ticks[0]).toBe(from + info.missed * 1000);
    // The oldest fired tick was within the window when the round ran; the one before it was not.
    expect(ticks[0]).toBeGreaterThanOrEqual(before - 60_000);
    expect(ticks[0]! - 1000).toBeLessThan(after - 60_000);
    // ... and every tick up to the round's now fired.
    expect(ticks.at(-1)).toBeLessThanOrEqual(after);
    expect(info.nextTickAt).toBe(ticks.at(-1)! + 1000);
    expect(info.nextTickAt).toBeGreaterThan(before);
    expect(info.missed).toBeGreaterThanOrEqual(238);
    expect(fired).toBeGreaterThanOrEqual(60);
  });

  it(`catch-up of a cron schedule: at most ${MAX_TICKS_PER_ROUND} ticks a round, the rest in the rounds after`, async () => {
    await t.schedules.create({ id: "secs", cron: "* * * * * *", overlap: "allow", catchupWindowMs: 600_000 }, template());
    const from = await t.rewind("secs", 300_000);
    const s = scheduler();
    expect(await s.fireDue()).toBe(MAX_TICKS_PER_ROUND);
    expect((await t.schedules.get("secs"))!.nextTickAt).toBe(from + MAX_TICKS_PER_ROUND * 1000);
    // Still due: the next rounds go on from there, until caught up.
    while ((await t.schedules.get("secs"))!.nextTickAt! <= (await t.now())) await s.fireDue();
    const ticks = await firedTicks("secs");
    expect(ticks[0]).toBe(from);
    expectConsecutive(ticks, 1000);
    expect(ticks.length).toBeGreaterThanOrEqual(300);
    expect(await t.schedules.get("secs")).toMatchObject({ fired: ticks.length, missed: 0 });
  });

  it("a paused schedule does not fire, and resumes without a burst for the paused time", async () => {
    await t.schedules.create({ id: "quiet", every: 60_000, overlap: "allow" }, template());
    await t.rewind("quiet", 600_000);
    await t.schedules.pause("quiet");
    await t.schedules.create({ id: "held-from-start", every: 1000, paused: true }, template());
    const s = scheduler();
    expect(await s.fireDue()).toBe(0);
    await t.schedules.resume("quiet");
    expect(await s.fireDue()).toBe(0);
    expect(await firedTicks("quiet")).toEqual([]);
    expect(await firedTicks("held-from-start")).toEqual([]);
    expect(await t.schedules.get("quiet")).toMatchObject({ fired: 0, skipped: 0, missed: 0, paused: false });
  });

  it("a schedule that cannot be read is logged once per round and left alone; the others still fire", async () => {
    const { log, lines } = recordingLogger();
    await t.schedules.create({ id: "broken", every: 60_000 }, template());
    await t.schedules.create({ id: "fine", every: 60_000 }, template());
    await t.rewind("broken", 60_000);
    await t.rewind("fine", 60_000);
    await t.redis.hset(t.keys.schedule("broken"), "template", "{not json");
    const s = scheduler({ logger: log, leaseMs: 100 });
    expect(await s.fireDue()).toBe(1);
    const errors = () => lines.filter((l) => l.level === "error" && l.fields?.schedule === "broken");
    expect(errors()).toHaveLength(1);
    expect(errors()[0]!.message).toMatch(/cannot be read/);
    expect(await t.redis.hget(t.keys.schedule("broken"), "template")).toBe("{not json");
    expect(await t.redis.zscore(t.keys.schedulesDue(), "broken")).not.toBeNull();
    // Taken again once its lease lapses, and logged again: one line a round.
    await sleep(150);
    expect(await s.fireDue()).toBe(0);
    expect(errors()).toHaveLength(2);
  });

  it("an id in the due set without a schedule is removed from it", async () => {
    await t.redis.zadd(t.keys.schedulesDue(), 1, "ghost", 2, "bad id");
    expect(await scheduler().fireDue()).toBe(0);
    expect(await t.redis.zrange(t.keys.schedulesDue(), "0", "-1")).toEqual([]);
  });

  it("never throws out of its loop: a failed round is logged and the tick fires in a later round", async () => {
    const { log, lines } = recordingLogger();
    await t.schedules.create({ id: "flaky", every: 60_000, overlap: "allow" }, template());
    const from = await t.rewind("flaky", 60_000);
    t.tasks.failNext(2);
    const s = scheduler({ logger: log, leaseMs: 100, pollMs: 50 });
    s.start();
    await waitFor(async () => (await t.schedules.get("flaky"))?.fired === 1, { timeoutMs: 10_000 });
    await s.stop();
    expect(lines.filter((l) => l.level === "error" && l.fields?.schedule === "flaky")).toHaveLength(2);
    expect(await firedTicks("flaky")).toEqual([from]);
  });

  it("start twice is refused; stop waits for the round in flight and may be called again", async () => {
    await t.schedules.create({ id: "drain", every: 60_000, overlap: "allow" }, template());
    await t.rewind("drain", 60_000);
    const gate = t.tasks.close();
    const s = scheduler();
    s.start();
    expect(() => s.start()).toThrow(LifecycleError);
    expect(() => s.start()).toThrow(expect.objectContaining({ code: ErrorCodes.ALREADY_STARTED }));
    await gate.entered;
    let stopped = false;
    const stopping = s.stop().then(() => {
      stopped = true;
    });
    await sleep(100);
    expect(stopped).toBe(false);
    gate.open();
    await stopping;
    expect(await t.schedules.get("drain")).toMatchObject({ fired: 1 });
    await s.stop();
  });

  it("refuses bad tuning with a ValidationError naming the option", () => {
    expect(() => new Scheduler({ redis: t.redis, keys: t.keys, tasks: t.tasks, workerId: "w", leaseMs: 5 })).toThrow(/leaseMs/);
    expect(() => new Scheduler({ redis: t.redis, keys: t.keys, tasks: t.tasks, workerId: "" })).toThrow(/workerId/);
  });
});
