import { describe, expect, it } from "vitest";
import { DEFAULT_RETENTION, resolveRetention } from "../src/defaults.ts";

describe("resolveRetention", () => {
  it("is the defaults when given nothing: completed kept a day, failed a week, no counts", () => {
    expect(resolveRetention(undefined)).toEqual(DEFAULT_RETENTION);
    expect(DEFAULT_RETENTION.keepCompleted).toEqual({ count: 0, ageMs: 86_400_000 });
    expect(DEFAULT_RETENTION.keepFailed).toEqual({ count: 0, ageMs: 604_800_000 });
  });

  it("takes recordTtlMs as the completed records' age, unless keepCompleted sets its own", () => {
    expect(resolveRetention({ recordTtlMs: 5000 }).keepCompleted).toEqual({ count: 0, ageMs: 5000 });
    expect(resolveRetention({ recordTtlMs: 5000, keepCompleted: { ageMs: 7000 } }).keepCompleted).toEqual({ count: 0, ageMs: 7000 });
    // Failed records keep their own age.
    expect(resolveRetention({ recordTtlMs: 5000 }).keepFailed.ageMs).toBe(604_800_000);
  });

  it("falls back to `base` (a worker's retention, for one queue's) for what the options leave unset, keep rules field by field", () => {
    const worker = resolveRetention({ eventTtlMs: 1000, keepFailed: { count: 7, ageMs: 9000 } });
    const queue = resolveRetention({ keepFailed: { count: 3 }, keepCompleted: { count: 10, ageMs: undefined } }, worker);
    expect(queue).toMatchObject({ eventTtlMs: 1000, keepFailed: { count: 3, ageMs: 9000 }, keepCompleted: { count: 10, ageMs: 86_400_000 } });
  });
});
