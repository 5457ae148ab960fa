import { WaitTimeoutError } from "@flotilla/core";

export interface WaitForOptions {
  /** @default 10_000 */
  timeoutMs?: number;
  /** @default 20 */
  intervalMs?: number;
  /** Named in the timeout error: "timed out after … waiting for <what>". @default "condition" */
  what?: string;
}

/**
 * Re-checks `check` until it returns something truthy, and returns that. For waiting on other
 * processes (workers, Redis) in tests; an error thrown by `check` ends the wait at once.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 10_000, intervalMs = 20, what = "condition" }: WaitForOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new WaitTimeoutError(what, timeoutMs);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
