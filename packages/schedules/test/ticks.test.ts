import { describe, expect, it } from "vitest";
import { MAX_TICKS_PER_ROUND, planRound } from "../src/plan.ts";
import { cronProblem, nextTick, tickClock, timezoneProblem } from "../src/ticks.ts";

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

/** The ticks of a cadence strictly after `from`, `n` of them. */
function ticks(cadence: Parameters<typeof nextTick>[0], anchor: number, from: number, n: number): Array<string | undefined> {
  const out: Array<string | undefined> = [];
  let t: number | undefined = from;
  for (let i = 0; i < n && t !== undefined; i++) {
    t = nextTick(cadence, anchor, t);
    out.push(iso(t));
  }
  return out;
}

describe("cron ticks", () => {
  it("reads the pattern in its timezone, through a DST change (9:00 in Paris is 08:00Z in winter, 07:00Z in summer)", () => {
    // Paris moves to summer time on 2025-03-30 at 02:00 local.
    const cadence = { cron: "0 9 * * *", timezone: "Europe/Paris" };
    expect(ticks(cadence, 0, at("2025-03-28T12:00:00Z"), 3)).toEqual(["2025-03-29T08:00:00.000Z", "2025-03-30T07:00:00.000Z", "2025-03-31T07:00:00.000Z"]);
    // And back on 2025-10-26 at 03:00 local.
    expect(ticks(cadence, 0, at("2025-10-25T12:00:00Z"), 2)).toEqual(["2025-10-26T08:00:00.000Z", "2025-10-27T08:00:00.000Z"]);
    // The same pattern in UTC does not move.
    expect(ticks({ cron: "0 9 * * *", timezone: "UTC" }, 0, at("2025-03-29T12:00:00Z"), 2)).toEqual(["2025-03-30T09:00:00.000Z", "2025-03-31T09:00:00.000Z"]);
  });

  it("a tick is strictly after the time given, a tick itself included", () => {
    const cadence = { cron: "*/15 * * * *", timezone: "UTC" };
    expect(iso(nextTick(cadence, 0, at("2025-01-01T10:15:00Z")))).toBe("2025-01-01T10:30:00.000Z");
    expect(iso(nextTick(cadence, 0, at("2025-01-01T10:14:59.999Z")))).toBe("2025-01-01T10:15:00.000Z");
  });

  it("takes 6 fields, seconds first", () => {
    const cadence = { cron: "*/20 * * * * *", timezone: "UTC" };
    expect(ticks(cadence, 0, at("2025-01-01T10:00:05.500Z"), 4)).toEqual([
      "2025-01-01T10:00:20.000Z",
      "2025-01-01T10:00:40.000Z",
      "2025-01-01T10:01:00.000Z",
      "2025-01-01T10:01:20.000Z",
    ]);
  });

  it("says what is wrong with a pattern or a timezone", () => {
    expect(cronProblem("0 9 * * *", "UTC")).toBeUndefined();
    expect(cronProblem("0 9 * *", "UTC")).toMatch(/invalid cron pattern/);
    expect(cronProblem("0 0 9 * * * 2030", "UTC")).toMatch(/5 or 6 parts/);
    expect(cronProblem("61 * * * *", "UTC")).toMatch(/minute/);
    expect(cronProblem("0 0 30 2 *", "UTC")).toMatch(/never fires/);
    expect(timezoneProblem("Europe/Paris")).toBeUndefined();
    expect(timezoneProblem("Mars/Olympus")).toMatch(/unknown timezone/);
  });
});

describe("interval ticks", () => {
  it("are anchored at the creation time: createdAt + k * every, whatever time they are asked from", () => {
    const createdAt = 1_000_123;
    const cadence = { every: 60_000, timezone: "UTC" };
    expect(nextTick(cadence, createdAt, createdAt)).toBe(createdAt + 60_000);
    expect(nextTick(cadence, createdAt, createdAt + 59_999)).toBe(createdAt + 60_000);
    expect(nextTick(cadence, createdAt, createdAt + 60_000)).toBe(createdAt + 120_000);
    expect(nextTick(cadence, createdAt, createdAt + 3_600_001)).toBe(createdAt + 3_660_000);
    // Asked from before the anchor: the first tick is still the anchor plus one interval.
    expect(nextTick(cadence, createdAt, createdAt - 500_000)).toBe(createdAt + 60_000);
  });

  it("count the ticks before a cutoff in one step", () => {
    const clock = tickClock({ every: 1000, timezone: "UTC" }, 0);
    expect(clock.countBefore(5000, 5000, 10)).toEqual({ count: 0, next: 5000 });
    expect(clock.countBefore(5000, 5001, 10)).toEqual({ count: 1, next: 6000 });
    // A year of seconds, at once (the cap is for cron walks).
    expect(clock.countBefore(0, 31_536_000_000, 10)).toEqual({ count: 31_536_000, next: 31_536_000_000 });
  });
});

describe("a round's plan", () => {
  const clock = tickClock({ every: 1000, timezone: "UTC" }, 0);
  const base = { clock, catchupWindowMs: 60_000, overlap: "allow" as const, previousEnded: true };

  it("fires every tick up to now, in order, and moves the next tick past now", () => {
    expect(planRound({ ...base, from: 10_000, now: 12_500 })).toEqual({ fire: [10_000, 11_000, 12_000], skipped: 0, missed: 0, next: 13_000 });
    // Nothing due yet: the next tick stays.
    expect(planRound({ ...base, from: 13_000, now: 12_500 })).toEqual({ fire: [], skipped: 0, missed: 0, next: 13_000 });
  });

  it("counts ticks older than the catch-up window as missed and fires the rest", () => {
    const plan = planRound({ ...base, from: 0, now: 300_000 });
    expect(plan.missed).toBe(240);
    expect(plan.fire[0]).toBe(240_000);
    expect(plan.fire.at(-1)).toBe(300_000);
    expect(plan.fire).toHaveLength(61);
    expect(plan.next).toBe(301_000);
  });

  it("handles at most MAX_TICKS_PER_ROUND ticks; the rest stay due", () => {
    const plan = planRound({ ...base, catchupWindowMs: 1_000_000, from: 0, now: 300_000 });
    expect(plan.fire).toHaveLength(MAX_TICKS_PER_ROUND);
    expect(plan.next).toBe(MAX_TICKS_PER_ROUND * 1000);
  });

  it('with overlap "skip": fires one tick when the previous task ended, none when it has not', () => {
    expect(planRound({ ...base, overlap: "skip", from: 10_000, now: 12_500 })).toEqual({ fire: [10_000], skipped: 2, missed: 0, next: 13_000 });
    expect(planRound({ ...base, overlap: "skip", previousEnded: false, from: 10_000, now: 12_500 })).toEqual({ fire: [], skipped: 3, missed: 0, next: 13_000 });
  });

  it("walks cron ticks to count the missed ones", () => {
    const cron = tickClock({ cron: "* * * * * *", timezone: "UTC" }, 0);
    const now = at("2025-01-01T10:05:00Z");
    const plan = planRound({ ...base, clock: cron, from: now - 300_000, now });
    expect(plan).toMatchObject({ missed: 240, next: now + 1000 });
    expect(plan.fire).toHaveLength(61);
  });
});
