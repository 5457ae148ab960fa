// The one exponential backoff of the code base: task retries, Redis reconnects, re-subscribing, the
// claim loop, cancel re-checks, model turns, alert webhooks and Temporal cancels all pace their
// retries with it. Pure (no timers): callers sleep for what it returns.

/** How the wait grows from one attempt to the next. */
export interface ExponentialBackoff {
  /** The wait of attempt 0 (ms); each attempt after doubles it. */
  baseMs: number;
  /** No wait is longer than this (ms), before jitter. @default Infinity (no cap) */
  maxMs?: number;
  /** Up to this fraction (0 to 1) of each wait is taken off at random, so retries spread out. @default 0 */
  jitter?: number;
}

/**
 * Beyond this many doublings the wait stops growing: 2^40 ms is 35 years, so any cap is reached
 * before, and `baseMs * 2^attempt` never overflows to Infinity whatever `attempt` is.
 */
const MAX_DOUBLINGS = 40;

/**
 * The wait before attempt `attempt` (0 for the first retry; whole numbers ≥ 0) in whole ms:
 * `min(maxMs, baseMs · 2^attempt) · (1 − jitter · random)`, rounded. `random` in [0, 1), drawn when
 * not given; tests pass one to get exact values. With jitter j the wait lies in
 * `[(1 − j) · capped, capped]`.
 */
export function exponentialDelay(backoff: ExponentialBackoff, attempt: number, random: number = Math.random()): number {
  const capped = Math.min(backoff.maxMs ?? Number.POSITIVE_INFINITY, backoff.baseMs * 2 ** Math.min(attempt, MAX_DOUBLINGS));
  return Math.round(capped * (1 - (backoff.jitter ?? 0) * random));
}
