// The retry policy of the workflow's activities: the executor's settings, with the task's own
// maxRetries and backoff mapped onto them. Pure: the workflow imports it.
import { NON_RETRYABLE_CODES } from "@flotilla/core";
import type { RetryPolicy } from "@temporalio/common";
import type { ActivitySettings, TaskRetry } from "./types.ts";

/** Attempts of one activity when neither the executor nor the task asks for more. */
export const DEFAULT_MAXIMUM_ATTEMPTS = 5;

/**
 * How each activity of a task is retried. Temporal counts every attempt of an activity, those a
 * crashed worker's heartbeat timeout ended too, so the task's `maxRetries` (failures of the whole
 * run; 0 by default) can only raise the attempts: `max(maximumAttempts, maxRetries + 1)`; mapped
 * straight, a task submitted with the defaults would fail on the first crash instead of resuming.
 * The task's backoff (its own, else its worker's) paces the retries as in Redis mode — the first
 * wait `delayMs`, doubling, at most `maxDelayMs` — without its jitter, which Temporal has not.
 * Without `task` (workflows started before it was passed): 1 s doubling to 30 s, as they were.
 */
export function activityRetryPolicy(settings: ActivitySettings = {}, task?: TaskRetry): RetryPolicy {
  const attempts = settings.maximumAttempts ?? DEFAULT_MAXIMUM_ATTEMPTS;
  // Temporal refuses 0 ms and a cap below the first wait; Redis mode waits min(maxDelayMs, delayMs · 2^n).
  const initial = task ? Math.max(1, Math.min(task.backoff.delayMs, task.backoff.maxDelayMs)) : 1000;
  return {
    initialInterval: initial,
    backoffCoefficient: 2,
    maximumInterval: task ? Math.max(initial, task.backoff.maxDelayMs) : 30_000,
    maximumAttempts: task ? Math.max(attempts, task.maxRetries + 1) : attempts,
    // The activities fail these as non-retryable too; listing them also covers an older activity worker.
    nonRetryableErrorTypes: [...NON_RETRYABLE_CODES],
  };
}
