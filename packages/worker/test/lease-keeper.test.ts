// @single: the lease keeper on one connection of its own; the reconnect test kills that connection (CLIENT KILL ID), which watch() follows on a single Redis only
import type { Lane } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { AbortReason, createKeys, DEFAULT_RETENTION, ErrorCodes, type Logger, silentLogger } from "@flotilla/core";
import { FlotillaMetrics } from "@flotilla/metrics";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, recordingLogger, redisUrl, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { InFlight, type Running } from "../src/in-flight.ts";
import { LeaseKeeper } from "../src/lease-keeper.ts";
import { OutcomeRecorder } from "../src/outcome-recorder.ts";
import { Settler } from "../src/settler.ts";

// The lease keeper on its own, against real Redis: entries claimed with the broker's test calls and
// held in a real in-flight table; a run counts as running until its controller is aborted.
const redis = testRedis();
const prefix = testPrefix("lease-keeper");
const keys = createKeys(prefix);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** A broker whose renewals can be made to fail for one queue, and that counts them. */
class FlakyBroker extends TestBroker {
  renewals = 0;
  failFor: string | undefined;
  extraLost: string[] = [];
  /** Runs after the renewal's snapshot of the entries, before the renewal reaches Redis. */
  beforeRenew: (() => Promise<void>) | undefined;
  override async renew(lane: Lane, consumer: string, entryIds: readonly string[]): Promise<string[]> {
    this.renewals++;
    await this.beforeRenew?.();
    if (lane.queue === this.failFor) throw new Error(`renewal of ${lane.queue} refused`);
    return [...(await super.renew(lane, consumer, entryIds)), ...this.extraLost];
  }
}

/** Claims one new entry of `queue` for `consumer` and holds it in `inFlight` until aborted. */
async function hold(broker: TestBroker, inFlight: InFlight, queue: string, name: string, consumer = "w1", leaseFrom = performance.now()) {
  await broker.ensureGroup(queue);
  await broker.enqueue(queue, name);
  const blocking = redis.duplicate();
  const [entry] = await broker.claim(blocking, consumer, [queue], 1, 100);
  blocking.disconnect();
  const lane: Lane = { queue, priority: "normal" };
  let signal: AbortSignal | undefined;
  inFlight.track(
    lane,
    entry!.entryId,
    `${queue}/${name}`,
    leaseFrom,
    (controller) => {
      signal = controller.signal;
      return new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve()));
    },
    () => {},
  );
  return { lane, entryId: entry!.entryId, signal: signal! };
}

/** A lease keeper for consumer w1 with the default margin (a tenth of the lease). */
const keeperOf = (broker: TestBroker, inFlight: InFlight, leaseMs: number, log: Logger, fenced?: (run: Running) => void) =>
  new LeaseKeeper(broker, inFlight, { consumer: "w1", leaseMs, selfFenceMarginMs: Math.floor(leaseMs / 10), log, fenced });

describe("LeaseKeeper", () => {
  it("aborts, as stale, the runs whose entries another consumer took over, and keeps the others", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const { log, lines } = recordingLogger();
    const kept = await hold(broker, inFlight, "lk-a", "kept");
    const taken = await hold(broker, inFlight, "lk-a", "taken");
    // Another worker takes the second entry over, as a reclaim after a lapsed lease does.
    await redis.xclaim(keys.lane("lk-a", "normal"), "flotilla", "w2", 0, taken.entryId);
    const keeper = keeperOf(broker, inFlight, 60_000, log);
    await keeper.renew();
    expect(kept.signal.aborted).toBe(false);
    expect(taken.signal.aborted).toBe(true);
    const reason = taken.signal.reason as AbortReason;
    expect(reason).toBeInstanceOf(AbortReason);
    expect(reason.code).toBe(ErrorCodes.STALE_ATTEMPT);
    expect(reason.message).toMatch(/lease lost/);
    expect(lines).toEqual([{ level: "warn", message: expect.any(String), fields: { queue: "lk-a", entryId: taken.entryId, taskId: "lk-a/taken" } }]);
  });

  it("says nothing and aborts nothing for an entry whose outcome was written between the snapshot and the renewal; a real takeover still warns and aborts", async () => {
    const broker = new FlakyBroker(redis, keys);
    const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
    const inFlight = new InFlight(() => {});
    const { log, lines } = recordingLogger();
    // The worker's own wiring: the recorder tells the in-flight table an outcome is on its way.
    const recorder = new OutcomeRecorder({
      settler: new Settler(store, "w1"),
      store,
      broker,
      consumer: "w1",
      metrics: new FlotillaMetrics(),
      log: silentLogger,
      ended: () => {},
      deadLettered: () => {},
      settling: (lane, entryId) => inFlight.markSettling(lane, entryId),
    });
    const queue = "lk-e";
    await broker.ensureGroup(queue);
    await store.createMany(queue, [newTask(`${queue}/done`), newTask(`${queue}/taken`)]);
    const runs = await store.claim(queue, "w1", 2);
    const held = runs.map((run) => {
      if (run.kind !== "run") throw new Error(`expected a run, got ${run.kind}`);
      const lane: Lane = { queue, priority: run.priority };
      let signal: AbortSignal | undefined;
      // Its work is not over until the test says so: the settle's reply is still on its way.
      inFlight.track(
        lane,
        run.entryId,
        run.taskId,
        performance.now(),
        (controller) => {
          signal = controller.signal;
          return new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve()));
        },
        () => {},
      );
      return { lane, run, signal: signal! };
    });
    const [done, taken] = held as [(typeof held)[0], (typeof held)[0]];
    // Another worker takes the second entry over, as a reclaim after a lapsed lease does.
    await redis.xclaim(keys.lane(queue, "normal"), "flotilla", "w2", 0, taken.run.entryId);
    // The first one's outcome is written (and its entry acknowledged) after the snapshot, before the renewal.
    broker.beforeRenew = async () => {
      broker.beforeRenew = undefined;
      await recorder.record(done.lane, done.run.entryId, done.run.taskId, { attempt: done.run.attempt, status: "COMPLETED", agent: "a", result: 1 });
    };
    await keeperOf(broker, inFlight, 60_000, log).renew();
    expect(await redis.xpending(keys.lane(queue, "normal"), "flotilla", "-", "+", 10)).toEqual([
      [taken.run.entryId, "w2", expect.any(Number), expect.any(Number)],
    ]);
    expect(done.signal.aborted).toBe(false);
    expect(taken.signal.aborted).toBe(true);
    expect((taken.signal.reason as AbortReason).code).toBe(ErrorCodes.STALE_ATTEMPT);
    expect(lines).toEqual([
      { level: "warn", message: "lease lost: the entry is no longer ours", fields: { queue, entryId: taken.run.entryId, taskId: taken.run.taskId } },
    ]);
  });

  it("goes on with the other lanes when one lane's renewal fails, and ignores lost entries it no longer runs", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const { log, lines } = recordingLogger();
    const failing = await hold(broker, inFlight, "lk-b", "one");
    const other = await hold(broker, inFlight, "lk-c", "two");
    await redis.xclaim(keys.lane("lk-c", "normal"), "flotilla", "w2", 0, other.entryId);
    broker.failFor = "lk-b";
    // An entry the broker calls lost that this worker finished meanwhile.
    broker.extraLost = ["999-0"];
    const keeper = keeperOf(broker, inFlight, 60_000, log);
    await keeper.renew();
    expect(failing.signal.aborted).toBe(false);
    expect(other.signal.aborted).toBe(true);
    expect(lines.map((l) => [l.level, l.fields])).toEqual([
      ["warn", { err: expect.objectContaining({ message: "renewal of lk-b refused" }), queue: "lk-b" }],
      ["warn", { queue: "lk-c", entryId: other.entryId, taskId: "lk-c/two" }],
    ]);
  });

  it("renews every sixth of the lease once started, without keeping the process alive, until stopped", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    // A lease dated in the future never lapses here: this test is about the renewal timer, not the fence.
    await hold(broker, inFlight, "lk-d", "one", "w1", Number.POSITIVE_INFINITY);
    const keeper = keeperOf(broker, inFlight, 180, recordingLogger().log);
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = refTimers();
    keeper.start();
    expect(refTimers()).toBe(before);
    // A second start keeps the one timer.
    keeper.start();
    await waitFor(async () => broker.renewals >= 4, { what: "four renewals" });
    keeper.stop();
    const stoppedAt = broker.renewals;
    await new Promise((r) => setTimeout(r, 150));
    expect(broker.renewals).toBe(stoppedAt);
    // Started again after a stop, it renews again.
    keeper.start();
    await waitFor(async () => broker.renewals > stoppedAt, { what: "renewals after a restart" });
    keeper.stop();
  });
});

describe("LeaseKeeper: self-fencing", () => {
  it("aborts, as LEASE_EXPIRED, a run whose lease was last given or renewed a lease less the margin ago, and no other", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const { log, lines } = recordingLogger();
    const fenced: string[] = [];
    const keeper = keeperOf(broker, inFlight, 10_000, log, (run) => fenced.push(run.taskId));
    // Whole milliseconds, so that the boundary below is exact in floating point.
    const now = Math.round(performance.now());
    // Lease 10 s, margin 1 s: a run whose lease dates from 9 s ago may lapse within the margin.
    const old = await hold(broker, inFlight, "lk-f", "old", "w1", now - 9_000);
    const fresh = await hold(broker, inFlight, "lk-f", "fresh", "w1", now - 8_990);
    const settling = await hold(broker, inFlight, "lk-f", "settling", "w1", now - 20_000);
    inFlight.markSettling(settling.lane, settling.entryId);
    keeper.fence(now);
    expect(old.signal.aborted).toBe(true);
    const reason = old.signal.reason as AbortReason;
    expect(reason).toBeInstanceOf(AbortReason);
    expect(reason.code).toBe(ErrorCodes.LEASE_EXPIRED);
    expect(reason.message).toBe("the lease could not be renewed for 9000 ms of 10000: another worker may take the task over");
    // A run whose outcome is being written runs nothing of its own any more.
    expect(fresh.signal.aborted).toBe(false);
    expect(settling.signal.aborted).toBe(false);
    expect(fenced).toEqual(["lk-f/old"]);
    expect(lines).toEqual([
      {
        level: "warn",
        message: "lease not renewed in time (Redis unreachable?): stopping the run before another worker may take it over",
        fields: { queue: "lk-f", entryId: old.entryId, taskId: "lk-f/old", renewedMsAgo: 9000, leaseMs: 10_000 },
      },
    ]);
    // Told once: a run already stopped is not stopped again.
    keeper.fence(now + 5_000);
    expect(fenced).toEqual(["lk-f/old", "lk-f/fresh"]);
    expect(keeper.lapsed(now - 9_000, now)).toBe(true);
    expect(keeper.lapsed(now - 8_999, now)).toBe(false);
  });

  it("counts a lease from when the renewal that worked was sent; a failed renewal moves nothing", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const keeper = keeperOf(broker, inFlight, 10_000, silentLogger);
    const longAgo = performance.now() - 9_500;
    const renewed = await hold(broker, inFlight, "lk-g", "renewed", "w1", longAgo);
    const refused = await hold(broker, inFlight, "lk-h", "refused", "w1", longAgo);
    const taken = await hold(broker, inFlight, "lk-g", "taken", "w1", longAgo);
    await redis.xclaim(keys.lane("lk-g", "normal"), "flotilla", "w2", 0, taken.entryId);
    broker.failFor = "lk-h";
    let sentAfter = 0;
    broker.beforeRenew = async () => {
      sentAfter = performance.now();
    };
    await keeper.renew();
    const at = (entryId: string, queue: string) => inFlight.get({ queue, priority: "normal" }, entryId)!.leaseFrom;
    // Sent before the broker call began: no later than the moment the broker saw it.
    expect(at(renewed.entryId, "lk-g")).toBeGreaterThan(longAgo + 9_000);
    expect(at(renewed.entryId, "lk-g")).toBeLessThanOrEqual(sentAfter);
    expect(at(refused.entryId, "lk-h")).toBe(longAgo);
    keeper.fence();
    expect(renewed.signal.aborted).toBe(false);
    expect((refused.signal.reason as AbortReason).code).toBe(ErrorCodes.LEASE_EXPIRED);
    // The taken-over run was stopped as stale by the renewal, not fenced.
    expect((taken.signal.reason as AbortReason).code).toBe(ErrorCodes.STALE_ATTEMPT);
  });

  it("once started, stops a run whose renewals keep failing, never before its lease less the margin, and sends no renewal while one is out", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const keeper = keeperOf(broker, inFlight, 600, silentLogger);
    // Redis out of reach: the first renewal never comes back.
    let answer: (() => void) | undefined;
    broker.beforeRenew = () => new Promise<void>((resolve) => (answer = resolve));
    const leaseFrom = performance.now();
    const run = await hold(broker, inFlight, "lk-i", "cut", "w1", leaseFrom);
    let abortedAt = 0;
    run.signal.addEventListener("abort", () => (abortedAt = performance.now()));
    keeper.start();
    await waitFor(async () => run.signal.aborted, { what: "the run to be fenced" });
    keeper.stop();
    expect((run.signal.reason as AbortReason).code).toBe(ErrorCodes.LEASE_EXPIRED);
    expect(abortedAt).toBeGreaterThanOrEqual(leaseFrom + 600 - 60);
    // Ticks came every 100 ms meanwhile; only the first renewal was sent.
    expect(broker.renewals).toBe(1);
    answer?.();
  });

  it("never stops a run that has finished (its events and outcome still to write), keeps renewing it, and stops it only when its entry is truly lost", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const fenced: string[] = [];
    const keeper = keeperOf(broker, inFlight, 10_000, silentLogger, (run) => fenced.push(run.taskId));
    const longAgo = performance.now() - 20_000;
    const finished = await hold(broker, inFlight, "lk-j", "finished", "w1", longAgo);
    const taken = await hold(broker, inFlight, "lk-j", "taken", "w1", longAgo);
    const running = await hold(broker, inFlight, "lk-j", "running", "w1", longAgo);
    for (const run of [finished, taken]) inFlight.markFinished(run.lane, run.entryId);
    // Its lease lapsed long ago here (Redis slow or out of reach while its outcome waited): finished work is not thrown away.
    keeper.fence();
    expect(finished.signal.aborted).toBe(false);
    expect(taken.signal.aborted).toBe(false);
    expect((running.signal.reason as AbortReason).code).toBe(ErrorCodes.LEASE_EXPIRED);
    expect(fenced).toEqual(["lk-j/running"]);
    // Renewed like any other until its outcome lands; one another worker took over is a real loss.
    await redis.xclaim(keys.lane("lk-j", "normal"), "flotilla", "w2", 0, taken.entryId);
    const before = performance.now();
    await keeper.renew();
    expect(inFlight.get(finished.lane, finished.entryId)!.leaseFrom).toBeGreaterThanOrEqual(before);
    expect(finished.signal.aborted).toBe(false);
    expect((taken.signal.reason as AbortReason).code).toBe(ErrorCodes.STALE_ATTEMPT);
  });
});

describe("LeaseKeeper: reconnects", () => {
  it("queues a renewal of every lease the moment the connection drops, so it goes first on the new one, and counts the lease from when the new connection opened", async () => {
    const conn = new Redis(redisUrl());
    const broker = new FlakyBroker(conn, keys);
    const inFlight = new InFlight(() => {});
    const keeper = keeperOf(broker, inFlight, 60_000, silentLogger);
    const run = await hold(broker, inFlight, "lk-k", "held", "w1", performance.now());
    keeper.watch(conn);
    let renewAsked: { at: number; status: string } | undefined;
    broker.beforeRenew = async () => {
      renewAsked ??= { at: performance.now(), status: conn.status };
    };
    let openedAt = 0;
    conn.on("connect", () => {
      openedAt ||= performance.now();
    });
    const ready = new Promise<number>((resolve) => conn.once("ready", () => resolve(performance.now())));
    await redis.call("CLIENT", "KILL", "ID", String(await conn.client("ID")));
    const readyAt = await ready;
    await waitFor(async () => renewAsked !== undefined && inFlight.get(run.lane, run.entryId)!.leaseFrom > renewAsked.at, {
      what: "the renewal queued at the drop to land",
    });
    keeper.stop();
    // Asked for while the connection was down (not when it came back): the offline queue sends it first.
    expect(renewAsked!.status).not.toBe("ready");
    expect(renewAsked!.at).toBeLessThan(openedAt);
    // Its lease counts from when the connection it was answered on opened (the keeper heard of it just before this
    // test did): later than it was asked for, no later than ready.
    const leaseFrom = inFlight.get(run.lane, run.entryId)!.leaseFrom;
    expect(leaseFrom).toBeGreaterThan(renewAsked!.at);
    expect(leaseFrom).toBeLessThanOrEqual(openedAt);
    expect(openedAt).toBeLessThanOrEqual(readyAt);
    expect(run.signal.aborted).toBe(false);
    conn.disconnect();
  });
});
