import type { Lane } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, ErrorCodes, type LogFields, type Logger } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { AbortReason } from "../src/abort-reason.ts";
import { InFlight } from "../src/in-flight.ts";
import { LeaseKeeper } from "../src/lease-keeper.ts";

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
  override async renew(lane: Lane, consumer: string, entryIds: readonly string[]): Promise<string[]> {
    this.renewals++;
    if (lane.queue === this.failFor) throw new Error(`renewal of ${lane.queue} refused`);
    return [...(await super.renew(lane, consumer, entryIds)), ...this.extraLost];
  }
}

function logger() {
  const lines: Array<{ level: string; message: string; fields: LogFields | undefined }> = [];
  const log = Object.fromEntries(
    (["debug", "info", "warn", "error"] as const).map((level) => [level, (message: string, fields?: LogFields) => void lines.push({ level, message, fields })]),
  ) as unknown as Logger;
  return { log, lines };
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
    const { log, lines } = logger();
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

  it("goes on with the other lanes when one lane's renewal fails, and ignores lost entries it no longer runs", async () => {
    const broker = new FlakyBroker(redis, keys);
    const inFlight = new InFlight(() => {});
    const { log, lines } = logger();
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
    const keeper = new LeaseKeeper(broker, inFlight, "w1", 90, logger().log);
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
