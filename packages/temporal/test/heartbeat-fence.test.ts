import { ErrorCodes, sleep } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { AbortReason } from "@flotilla/worker";
import { describe, expect, it } from "vitest";
import { fenceTiming, HeartbeatFence, type HeartbeatFenceOptions } from "../src/heartbeat-fence.ts";

const TIMEOUT = 3000;
const MARGIN = 300;

function fenceWith(beat: HeartbeatFenceOptions["beat"], startedAt = 0) {
  const lapses: Array<{ reason: AbortReason; beatMsAgo: number }> = [];
  let gone = 0;
  const fence = new HeartbeatFence(
    {
      beat,
      intervalMs: 1000,
      timeoutMs: TIMEOUT,
      marginMs: MARGIN,
      lapsed: (reason, beatMsAgo) => lapses.push({ reason, beatMsAgo }),
      gone: () => gone++,
    },
    startedAt,
  );
  return { fence, lapses, gone: () => gone };
}

const answered = async () => true;
const state = (promise: Promise<void>) => Promise.race([promise.then(() => "resolved"), sleep(20).then(() => "pending")]);

describe("HeartbeatFence (Temporal mode's self-fencing)", () => {
  it("stops the activity once, at its start + the heartbeat timeout - the margin, with LEASE_EXPIRED", () => {
    const { fence, lapses } = fenceWith(answered, 1000);
    fence.check(1000 + TIMEOUT - MARGIN - 1);
    expect(lapses).toEqual([]);
    fence.check(1000 + TIMEOUT - MARGIN);
    expect(lapses).toHaveLength(1);
    expect(lapses[0]!.reason).toBeInstanceOf(AbortReason);
    expect(lapses[0]!.reason.code).toBe(ErrorCodes.LEASE_EXPIRED);
    expect(lapses[0]!.reason.message).toMatch(/no heartbeat reached Temporal for 2700 ms of the 3000 ms heartbeat timeout/);
    expect(lapses[0]!.beatMsAgo).toBe(TIMEOUT - MARGIN);
    fence.check(1000 + 2 * TIMEOUT);
    expect(lapses).toHaveLength(1);
  });

  it("an answered beat restarts the lease from when it was sent, not when it was answered", async () => {
    const { fence, lapses } = fenceWith(() => sleep(60).then(() => true));
    const before = performance.now();
    await fence.beatOnce();
    const after = performance.now();
    expect(after - before).toBeGreaterThanOrEqual(55);
    // Counted from the send (≈ before): not yet due just before before's deadline...
    fence.check(before + TIMEOUT - MARGIN - 1);
    expect(lapses).toEqual([]);
    // ...and due well before the deadline counted from the answer.
    fence.check(before + 20 + TIMEOUT - MARGIN);
    expect(lapses).toHaveLength(1);
  });

  it("a failed beat renews nothing", async () => {
    const { fence, lapses } = fenceWith(async () => {
      throw new Error("unreachable");
    }, 0);
    await fence.beatOnce();
    fence.check(TIMEOUT - MARGIN);
    expect(lapses).toHaveLength(1);
  });

  it("sends one beat at a time: a beat still out (the server unreachable) is not joined by another", async () => {
    let calls = 0;
    let answer = () => {};
    const { fence } = fenceWith(() => {
      calls++;
      return new Promise<boolean>((resolve) => {
        answer = () => resolve(true);
      });
    });
    const first = fence.beatOnce();
    await fence.beatOnce();
    expect(calls).toBe(1);
    answer();
    await first;
    void fence.beatOnce();
    expect(calls).toBe(2);
    answer();
  });

  it("beats on its timer from the start, and stops beating when stopped", async () => {
    let calls = 0;
    const fence = new HeartbeatFence({
      beat: async () => {
        calls++;
        return true;
      },
      intervalMs: 20,
      timeoutMs: 60_000,
      marginMs: 100,
      lapsed: () => {},
      gone: () => {},
    });
    fence.start();
    expect(calls).toBe(1);
    await waitFor(() => calls >= 3, { what: "two beats on the timer" });
    fence.stop();
    const seen = calls;
    await sleep(100);
    expect(calls).toBe(seen);
  });

  it("is ready (the work may start) at the first answered beat, not before, and not for a failed one", async () => {
    let ok = false;
    const { fence } = fenceWith(async () => {
      if (!ok) throw new Error("unreachable");
      return true;
    });
    await fence.beatOnce();
    expect(await state(fence.ready)).toBe("pending");
    ok = true;
    await fence.beatOnce();
    expect(await state(fence.ready)).toBe("resolved");
  });

  it("a beat answered NOT_FOUND (the server no longer holds the activity) says gone once, and is never ready", async () => {
    let beats = 0;
    const { fence, lapses, gone } = fenceWith(async () => {
      beats++;
      return false;
    });
    await fence.beatOnce();
    expect(gone()).toBe(1);
    await fence.beatOnce();
    expect(beats).toBe(1);
    expect(gone()).toBe(1);
    fence.check(10 * TIMEOUT);
    expect(lapses).toEqual([]);
    expect(await state(fence.ready)).toBe("pending");
  });

  it("fenceTiming: a tenth of the timeout by default; interval and margin at most a third of it", () => {
    expect(fenceTiming(10_000, 1000, undefined)).toEqual({ intervalMs: 1000, marginMs: 1000 });
    expect(fenceTiming(10_000, 1000, 500)).toEqual({ intervalMs: 1000, marginMs: 500 });
    expect(fenceTiming(1500, 1000, 900)).toEqual({ intervalMs: 500, marginMs: 500 });
  });
});
