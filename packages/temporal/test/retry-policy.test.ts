import { NON_RETRYABLE_CODES } from "@flotilla/core";
import { compileRetryPolicy } from "@temporalio/common";
import { describe, expect, it } from "vitest";
import { activityRetryPolicy } from "../src/retry-policy.ts";

const backoff = (delayMs: number, maxDelayMs: number) => ({ delayMs, maxDelayMs, jitter: 0.5 });

describe("activityRetryPolicy", () => {
  it("keeps the policy workflows started without the task's retry settings had", () => {
    expect(activityRetryPolicy()).toEqual({
      initialInterval: 1000,
      backoffCoefficient: 2,
      maximumInterval: 30_000,
      maximumAttempts: 5,
      nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
    });
    expect(activityRetryPolicy({ maximumAttempts: 2 })).toMatchObject({ maximumAttempts: 2 });
  });

  it("paces retries by the task's backoff: its first wait, doubling, up to its cap", () => {
    expect(activityRetryPolicy({}, { maxRetries: 0, backoff: backoff(2500, 7000) })).toMatchObject({
      initialInterval: 2500,
      backoffCoefficient: 2,
      maximumInterval: 7000,
    });
    // A cap below the first wait caps it (Redis mode waits min(maxDelayMs, delayMs · 2^n)); 0 ms is Temporal's smallest wait.
    expect(activityRetryPolicy({}, { maxRetries: 0, backoff: backoff(5000, 1000) })).toMatchObject({ initialInterval: 1000, maximumInterval: 1000 });
    expect(activityRetryPolicy({}, { maxRetries: 0, backoff: backoff(0, 0) })).toMatchObject({ initialInterval: 1, maximumInterval: 1 });
  });

  it("gives each activity maxRetries + 1 attempts when that is more than the executor's, never fewer", () => {
    expect(activityRetryPolicy({}, { maxRetries: 7, backoff: backoff(1000, 60_000) }).maximumAttempts).toBe(8);
    expect(activityRetryPolicy({ maximumAttempts: 2 }, { maxRetries: 3, backoff: backoff(1000, 60_000) }).maximumAttempts).toBe(4);
    // The default maxRetries (0) keeps the attempts that let a crashed worker's activity run again.
    expect(activityRetryPolicy({}, { maxRetries: 0, backoff: backoff(1000, 60_000) }).maximumAttempts).toBe(5);
  });

  it("is a policy Temporal accepts, whatever backoff the task's schema allows", () => {
    for (const [delayMs, maxDelayMs] of [
      [0, 0],
      [0, 60_000],
      [86_400_000, 0],
      [1, 7 * 86_400_000],
    ] as const) {
      expect(() => compileRetryPolicy(activityRetryPolicy({}, { maxRetries: 100, backoff: backoff(delayMs, maxDelayMs) }))).not.toThrow();
    }
  });
});
