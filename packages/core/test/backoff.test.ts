// The one exponential backoff (task retries, reconnects, claim and cancel loops, model turns,
// webhooks): its bounds, cap and jitter, for whatever attempt number.
import { describe, expect, it } from "vitest";
import { backoffDelay, exponentialDelay } from "../src/index.ts";

describe("exponentialDelay", () => {
  it("starts at baseMs for attempt 0 and doubles for each attempt after", () => {
    expect([0, 1, 2, 3, 4].map((a) => exponentialDelay({ baseMs: 100 }, a))).toEqual([100, 200, 400, 800, 1600]);
  });

  it("never goes past maxMs, and stays there", () => {
    const b = { baseMs: 50, maxMs: 2000 };
    expect([5, 6, 7, 30].map((a) => exponentialDelay(b, a))).toEqual([1600, 2000, 2000, 2000]);
    expect(exponentialDelay({ baseMs: 3000, maxMs: 2000 }, 0)).toBe(2000);
  });

  it("takes off at most the jitter fraction, at random: random 0 keeps the whole wait, random → 1 takes the whole fraction off", () => {
    const b = { baseMs: 100, maxMs: 1000, jitter: 0.5 };
    expect(exponentialDelay(b, 3, 0)).toBe(800);
    expect(exponentialDelay(b, 3, 0.5)).toBe(600);
    expect(exponentialDelay(b, 3, 0.999_999)).toBe(400);
    for (let i = 0; i < 200; i++) {
      const d = exponentialDelay(b, 3);
      expect(d).toBeGreaterThanOrEqual(400);
      expect(d).toBeLessThanOrEqual(800);
    }
    // Jitter comes off the capped wait: the cap bounds it from above, never the other way round.
    expect(exponentialDelay(b, 20, 0.999_999)).toBe(500);
  });

  it("has no jitter unless told, whatever random is", () => {
    expect(exponentialDelay({ baseMs: 100, maxMs: 1000 }, 2, 0.9)).toBe(400);
  });

  it("stays a finite number for huge attempt numbers, capped or not", () => {
    expect(exponentialDelay({ baseMs: 100, maxMs: 60_000 }, 10_000)).toBe(60_000);
    expect(exponentialDelay({ baseMs: 100, maxMs: 60_000 }, Number.MAX_SAFE_INTEGER, 0.5)).toBe(60_000);
    const uncapped = exponentialDelay({ baseMs: 500 }, 1e9);
    expect(Number.isFinite(uncapped)).toBe(true);
    expect(uncapped).toBe(500 * 2 ** 40);
  });

  it("returns whole milliseconds", () => {
    expect(exponentialDelay({ baseMs: 100, jitter: 0.3 }, 0, 0.123)).toBe(96);
    expect(Number.isInteger(exponentialDelay({ baseMs: 7, maxMs: 1000, jitter: 1 }, 5))).toBe(true);
  });

  it("is what a task's retry backoff uses (backoffDelay), field for field", () => {
    const task = { delayMs: 1000, maxDelayMs: 60_000, jitter: 0.5 };
    for (const [retries, random] of [
      [0, 0],
      [1, 0.3],
      [5, 0.7],
      [6, 0.99],
      [60, 0.1],
    ] as const) {
      expect(backoffDelay(task, retries, random)).toBe(exponentialDelay({ baseMs: 1000, maxMs: 60_000, jitter: 0.5 }, retries, random));
    }
  });
});
