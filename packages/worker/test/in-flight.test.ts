import type { Lane } from "@flotilla/broker";
import { describe, expect, it } from "vitest";
import { InFlight } from "../src/in-flight.ts";

// The in-flight table on its own (no Redis): the dispatcher, lease keeper and session tests use it too.
const lane: Lane = { queue: "q", priority: "normal" };
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe("InFlight", () => {
  it("marks a held entry as settling, and ignores an entry it does not hold", async () => {
    const inFlight = new InFlight(() => {});
    inFlight.track(
      lane,
      "1-0",
      "q/t",
      0,
      () => sleep(10),
      () => {},
    );
    inFlight.markSettling(lane, "1-0");
    expect(inFlight.get(lane, "1-0")?.settling).toBe(true);
    expect(() => inFlight.markSettling(lane, "2-0")).not.toThrow();
    expect(() => inFlight.markSettling({ queue: "q", priority: "high" }, "1-0")).not.toThrow();
    expect(inFlight.has(lane, "2-0")).toBe(false);
    await inFlight.settled();
  });

  it("without a timeout, waits for everything held however long it takes", async () => {
    const inFlight = new InFlight(() => {});
    let done = false;
    inFlight.track(
      lane,
      "1-0",
      "q/slow",
      0,
      async () => {
        await sleep(50);
        done = true;
      },
      () => {},
    );
    expect(await inFlight.settled()).toBe(true);
    expect(done).toBe(true);
    expect(inFlight.size).toBe(0);
  });

  it("with a timeout, gives up on what is still running", async () => {
    const inFlight = new InFlight(() => {});
    let release = () => {};
    inFlight.track(
      lane,
      "1-0",
      "q/stuck",
      0,
      () => new Promise<void>((r) => (release = r)),
      () => {},
    );
    expect(await inFlight.settled(20)).toBe(false);
    release();
    expect(await inFlight.settled(5_000)).toBe(true);
  });

  it("waits also for work tracked while it waits (a claim answered as the worker stops), and starts it aborted after abortAll", async () => {
    const inFlight = new InFlight(() => {});
    let lateRan = false;
    inFlight.track(
      lane,
      "1-0",
      "q/first",
      0,
      async () => {
        await sleep(30);
        // Its settle's claim started another task just as it ended.
        inFlight.track(
          lane,
          "2-0",
          "q/late",
          0,
          async () => {
            await sleep(50);
            lateRan = true;
          },
          () => {},
        );
      },
      () => {},
    );
    expect(await inFlight.settled()).toBe(true);
    expect(lateRan).toBe(true);

    inFlight.abortAll("stopping");
    let signal: AbortSignal | undefined;
    inFlight.track(
      lane,
      "3-0",
      "q/after",
      0,
      async (controller) => {
        signal = controller.signal;
      },
      () => {},
    );
    expect(signal?.aborted).toBe(true);
    expect(signal?.reason).toBe("stopping");
    expect(await inFlight.settled()).toBe(true);
  });
});
