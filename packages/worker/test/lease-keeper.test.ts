import type { Lane } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, DEFAULT_RETENTION, ErrorCodes, silentLogger } from "@flotilla/core";
import { FlotillaMetrics } from "@flotilla/metrics";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, recordingLogger, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { AbortReason } from "../src/abort-reason.ts";
import { InFlight } from "../src/in-flight.ts";
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
async function hold(broker: TestBroker, inFlight: InFlight, queue: string, name: string, consumer = "w1") {
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
    (controller) => {
      signal = controller.signal;
      return new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve()));
    },
    () => {},
  );
  return { lane, entryId: entry!.entryId, signal: signal! };
}

describe("LeaseKeeper", () => {
  it("aborts, as stale, the runs whose entries another consumer took over, and keeps the others", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const { log, lines } = recordingLogger();
    const kept = await hold(broker, inFlight, "lk-a", "kept");
    const taken = await hold(broker, inFlight, "lk-a", "taken");
    // Another worker takes the second entry over, as a reclaim after a lapsed lease does.
    await redis.xclaim(keys.lane("lk-a", "normal"), "flotilla", "w2", 0, taken.entryId);
    const keeper = new LeaseKeeper(broker, inFlight, "w1", 60_000, log);
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
    await new LeaseKeeper(broker, inFlight, "w1", 60_000, log).renew();
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
    const keeper = new LeaseKeeper(broker, inFlight, "w1", 60_000, log);
    await keeper.renew();
    expect(failing.signal.aborted).toBe(false);
    expect(other.signal.aborted).toBe(true);
    expect(lines.map((l) => [l.level, l.fields])).toEqual([
      ["warn", { err: expect.objectContaining({ message: "renewal of lk-b refused" }), queue: "lk-b" }],
      ["warn", { queue: "lk-c", entryId: other.entryId, taskId: "lk-c/two" }],
    ]);
  });

  it("renews every third of the lease once started, without keeping the process alive, until stopped", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    await hold(broker, inFlight, "lk-d", "one");
    const keeper = new LeaseKeeper(broker, inFlight, "w1", 90, recordingLogger().log);
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
