// @cluster: leases renewed and taken over on each queue's slot
import { CONSUMER_GROUP } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { ExecutionContext, TaskEndEvent } from "../src/index.ts";

describe("leases", () => {
  const h = useFlotilla("leases");

  /** A consumer that claims and starts a task, then goes silent, as a killed worker would. */
  async function ghostHolds(queue: string, taskId: string) {
    const blocking = h.redis.duplicate();
    const [entry] = await h.broker.claim(blocking, "ghost", [queue], 1, 500);
    blocking.disconnect();
    expect(entry?.fields?.task).toBe(taskId.slice(queue.length + 1));
    expect(await h.store.start(taskId, "ghost")).toMatchObject({ kind: "run", attempt: 1 });
  }

  it("reclaims a task whose holder went silent, as a new attempt that fences the old one out", async () => {
    const id = await h.submit(scripted("orphan"), "rescue me", { queue: "orphans" });
    await ghostHolds("orphans", id);
    const w = await h.worker({ queues: ["orphans"], leaseMs: 400 });
    const record = await h.until(id);
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 2, workerId: w.workerId, result: { text: "Echo: rescue me" } });
    const running = (await h.events(id)).filter((e) => e.type === "status" && e.status === "running");
    expect(running).toMatchObject([
      { attempt: 1, workerId: "ghost" },
      { attempt: 2, workerId: w.workerId, takenOverFrom: "ghost" },
    ]);
    // The ghost's late outcome and its ack are refused.
    expect(await h.store.finish(id, { attempt: 1, status: "FAILED", agent: "orphan", error: { message: "late", code: "X" } })).toMatchObject({
      ok: false,
    });
    expect((await h.store.get(id))?.status).toBe("COMPLETED");
  });

  it("fails a task past maxDeliveries and dead-letters its entry with the attempts and last error", async () => {
    const id = await h.submit(scripted("cursed"), "x", { queue: "cursed", maxDeliveries: 1 });
    await ghostHolds("cursed", id);
    await h.worker({ queues: ["cursed"], leaseMs: 300 });
    const record = await h.until(id);
    expect(record).toMatchObject({ status: "FAILED", attempt: 1, error: { code: "DELIVERY_LIMIT" } });
    const letters = await waitFor(async () => {
      const l = await h.broker.listDeadLetters("cursed");
      return l.length ? l : undefined;
    });
    expect(letters[0]).toMatchObject({ taskId: id, extra: { attempts: 1 } });
    expect(letters[0]!.reason).toMatch(/delivery limit reached after 1 attempts/);
  });

  it("takes over a dead worker's tasks oldest first: one whose worker died after newer ones lapsed is not left behind them", async () => {
    const queue = "oldest-first";
    const names = ["first", ...Array.from({ length: 40 }, (_, i) => `later-${i}`)];
    for (const name of names) await h.submit(scripted("held"), name, { queue, taskId: `${queue}/${name}` });
    // A worker that is gone held them all (claimed and started, oldest first).
    const blocking = h.redis.duplicate();
    const held = await h.broker.claim(blocking, "ghost", [queue], names.length, 500);
    blocking.disconnect();
    await h.store.startEntries(
      queue,
      "ghost",
      held.map((e) => ({ priority: e.priority, entryId: e.entryId, name: e.fields!.task! })),
      false,
    );
    const lane = h.keys.lane(queue, "normal");
    const [first, ...later] = held.map((e) => e.entryId) as [string, ...string[]];
    const idle = (id: string, ms: number) => h.redis.xclaim(lane, CONSUMER_GROUP, "ghost", 0, id, "IDLE", ms, "JUSTID");
    // The later ones lapsed long ago; the first is kept renewed, as by a worker still alive, until the test lets it lapse.
    for (const id of later) await idle(id, 60_000);
    let renewing = true;
    const renewer = (async () => {
      while (renewing) {
        await idle(first, 0);
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const started: string[] = [];
    await h.worker({
      queues: [queue],
      concurrency: 1,
      leaseMs: 1000,
      executor: {
        async execute({ taskId }) {
          started.push(taskId.slice(queue.length + 1));
          await new Promise((r) => setTimeout(r, 100));
          return null;
        },
      },
    });
    await waitFor(async () => started.length >= 3, { what: "the first takeovers" });
    renewing = false;
    await renewer;
    await waitFor(async () => started.length === names.length, { what: "every task to run again", timeoutMs: 30_000 });
    // It lapsed a second after the scans had passed it by: it is taken at the next scan, ahead of the
    // later ones still waiting (a scan that went on from where the last stopped took them all first).
    expect(started.indexOf("first"), started.join(" ")).toBeLessThan(names.length - 10);
  });

  it("never takes a long run away from a live worker that renews its lease", async () => {
    const leaseMs = 400;
    const holder = await h.worker({ queues: ["long"], leaseMs, concurrency: 1 });
    // 14 tokens at 150 ms: over 5 lease periods.
    const id = await h.submit(scripted("marathon", { tokenDelayMs: 150 }), "a b c d e f g h i j k l m n", { queue: "long" });
    await waitFor(async () => (await h.store.get(id))?.status === "RUNNING", { what: "the run to start" });
    // A second worker scans for lapsed leases all along.
    const rival = await h.worker({ queues: ["long"], leaseMs, concurrency: 2 });
    let stolen = 0;
    rival.on("task:started", () => stolen++);
    const record = await h.until(id);
    expect(record.durationMs).toBeGreaterThan(3 * leaseMs);
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 1, workerId: holder.workerId });
    expect(stolen).toBe(0);
  });

  it("in a fleet of different leases, a worker with a short lease never takes a live run from one with a long lease", async () => {
    // The holder renews every sixth of its 6 s lease; the rival scans every half of its 300 ms lease.
    const holder = await h.worker({ queues: ["mixed"], leaseMs: 6000, concurrency: 4 });
    const ids = await Promise.all([1, 2, 3, 4].map((i) => h.submit(scripted(`slow-${i}`, { tokenDelayMs: 250 }), "a b c d e f g h i j", { queue: "mixed" })));
    await waitFor(async () => (await Promise.all(ids.map((id) => h.store.get(id)))).every((r) => r?.status === "RUNNING"), {
      what: "the runs to start on the holder",
    });
    const rival = await h.worker({ queues: ["mixed"], leaseMs: 300, concurrency: 4 });
    let stolen = 0;
    rival.on("task:started", () => stolen++);
    for (const id of ids) {
      // 2.5 s each: more than eight of the rival's leases.
      expect(await h.until(id)).toMatchObject({ status: "COMPLETED", attempt: 1, workerId: holder.workerId });
    }
    expect(stolen).toBe(0);
  });

  it("forgets the consumers of workers that are gone, so the group does not keep one per worker id ever used", async () => {
    const consumers = async () => {
      const rows = (await h.redis.xinfo("CONSUMERS", h.keys.queue("churn"), CONSUMER_GROUP)) as string[][];
      return rows.map((r) => r[1]).sort();
    };
    // Three workers each run a task and stop, as restarts leave them.
    const gone: string[] = [];
    for (const i of [1, 2, 3]) {
      const w = await h.worker({ queues: ["churn"], leaseMs: 300 });
      gone.push(w.workerId);
      await h.until(await h.submit(scripted(`churn-${i}`), "x", { queue: "churn" }));
      await h.stopWorkers({ workers: [w] });
    }
    expect(await consumers()).toEqual([...gone].sort());
    // A live worker with a 300 ms lease forgets consumers silent for ten leases and holding nothing.
    const live = await h.worker({ queues: ["churn"], leaseMs: 300 });
    await h.until(await h.submit(scripted("churn-live"), "x", { queue: "churn" }));
    await waitFor(async () => (await consumers()).join() === live.workerId, { what: "the gone workers' consumers to be forgotten", timeoutMs: 10_000 });
  });

  /**
   * A worker whose attempt is held until the test lets it go, while its task is taken over at the
   * record (attempt 2 RUNNING elsewhere). Its entry stays its own, so its lease keeps renewing: only
   * the fences in the scripts stand between its late writes and the record.
   */
  async function overtaken(queue: string, late: (ctx: ExecutionContext) => void) {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const executor = {
      async execute(ctx: ExecutionContext) {
        await gate;
        late(ctx);
        return `from attempt ${ctx.attempt}`;
      },
    };
    const w = await h.worker({ queues: [queue], executor, leaseMs: 5_000 });
    const ended: TaskEndEvent[] = [];
    w.on("task:ended", (e) => ended.push(e));
    const id = await h.submit(scripted("held"), "x", { queue });
    await h.until(id, ["RUNNING"]);
    expect(await h.store.start(id, "rival", { reclaimed: true })).toMatchObject({ kind: "run", attempt: 2 });
    const before = await h.events(id);
    release();
    await w.stop(); // drains: the held attempt ends and makes its writes
    return { id, ended, before };
  }

  it("refuses the outcome of an attempt whose task another attempt runs now: the record stays the new attempt's", async () => {
    const { id, ended, before } = await overtaken("overtaken", () => {});
    expect(ended).toMatchObject([{ taskId: id, attempt: 1, status: "COMPLETED", recorded: false }]);
    expect(await h.store.get(id)).toMatchObject({ status: "RUNNING", attempt: 2, workerId: "rival" });
    expect((await h.store.get(id))?.result).toBeUndefined();
    expect(await h.events(id)).toEqual(before);
  });

  it("refuses the events of an attempt whose task another attempt runs now, and that attempt records no outcome", async () => {
    const { id, ended, before } = await overtaken("outshouted", (ctx) => ctx.emit({ type: "text", delta: "too late" }));
    // The refused publish tells the attempt it lost its claim: it leaves the outcome to its owner.
    expect(ended).toEqual([]);
    expect(await h.events(id)).toEqual(before);
    expect(await h.store.get(id)).toMatchObject({ status: "RUNNING", attempt: 2, workerId: "rival" });
  });

  it("aborts an attempt whose entry another consumer took over: its next renewal reports the lease lost", async () => {
    const reasons: unknown[] = [];
    const executor = {
      execute: (ctx: ExecutionContext) =>
        new Promise<never>((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            reasons.push(ctx.signal.reason);
            reject(ctx.signal.reason);
          }),
        ),
    };
    const w = await h.worker({ queues: ["stolen"], executor, leaseMs: 600 });
    const ended: TaskEndEvent[] = [];
    w.on("task:ended", (e) => ended.push(e));
    const id = await h.submit(scripted("held"), "x", { queue: "stolen" });
    await h.until(id, ["RUNNING"]);
    // Another consumer takes the entry over, as a reclaim does once a lease lapses.
    const lane = h.keys.lane("stolen", "normal");
    const [[entryId]] = (await h.redis.xpending(lane, CONSUMER_GROUP, "-", "+", 10)) as [[string]];
    await h.redis.xclaim(lane, CONSUMER_GROUP, "rival", 0, entryId);
    await waitFor(() => reasons.length > 0, { timeoutMs: 10_000, what: "the renewal to report the lease lost" });
    expect(reasons).toMatchObject([{ code: "STALE_ATTEMPT" }]);
    await w.stop();
    // It left the outcome to the entry's new owner: nothing recorded.
    expect(ended).toEqual([]);
    expect(await h.store.get(id)).toMatchObject({ status: "RUNNING", attempt: 1 });
  });

  it("never runs a finished task again from a leftover entry of it", async () => {
    let runs = 0;
    const executor = {
      async execute() {
        runs++;
        return "done";
      },
    };
    await h.worker({ queues: ["leftover"], executor });
    const id = await h.submit(scripted("once"), "x", { queue: "leftover" });
    const done = await h.until(id);
    expect(done).toMatchObject({ status: "COMPLETED", attempt: 1 });
    // A duplicate entry of the finished task (a resent enqueue, an operator's mistake) reaches the worker.
    await h.broker.enqueue("leftover", id.slice("leftover/".length));
    const lane = h.keys.lane("leftover", "normal");
    await waitFor(async () => (await h.redis.xlen(lane)) === 0, { what: "the leftover entry to be settled" });
    expect(runs).toBe(1);
    expect(await h.store.get(id)).toEqual(done);
  });

  it("schedules no retry from an entry another consumer took over before the failed attempt settled", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => {
      release = r;
    });
    const executor = {
      async execute() {
        await gate;
        throw new Error("flaky"); // retryable: the attempt settles as RETRYING
      },
    };
    const w = await h.worker({ queues: ["handed"], executor, leaseMs: 10_000 });
    const ended: TaskEndEvent[] = [];
    w.on("task:ended", (e) => ended.push(e));
    const id = await h.submit(scripted("held"), "x", { queue: "handed", maxRetries: 3 });
    await h.until(id, ["RUNNING"]);
    // A reclaim by another worker took the entry (its start not yet made) just before the attempt failed.
    const lane = h.keys.lane("handed", "normal");
    const [[entryId]] = (await h.redis.xpending(lane, CONSUMER_GROUP, "-", "+", 10)) as [[string]];
    await h.redis.xclaim(lane, CONSUMER_GROUP, "rival", 0, entryId);
    release();
    await waitFor(() => ended.length > 0, { what: "the failed attempt to settle" });
    expect(ended).toMatchObject([{ taskId: id, attempt: 1, status: "RETRYING" }]);
    // No second way to run the task: nothing in the delayed set, the entry still pending for its new holder.
    expect(await h.redis.zcard(h.keys.delayed("handed", "normal"))).toBe(0);
    const pending = (await h.redis.xpending(lane, CONSUMER_GROUP, "-", "+", 10)) as [string, string][];
    expect(pending.map(([entry, consumer]) => [entry, consumer])).toEqual([[entryId, "rival"]]);
    await w.stop();
  });
});
