// Outcomes must not be lost to a full or unreachable Redis: the write is sent again until it lands.
import { ErrorCodes, type ExponentialBackoff, exponentialDelay, FlotillaError, isRedisFull, type Logger, sleep } from "@flotilla/core";
import { isConnectionFailure } from "@flotilla/core/redis";

/** Pause before sending a refused write again: 100 ms, doubling to 2 s, jittered. */
const PERSIST_BACKOFF: ExponentialBackoff = { baseMs: 100, maxMs: 2000, jitter: 0.2 };

/** Whether a write that failed may land if sent again as it is: Redis was out of reach, or full. */
export function worthResending(err: unknown): boolean {
  if (err instanceof FlotillaError) return err.code === ErrorCodes.REDIS_UNAVAILABLE || err.code === ErrorCodes.REDIS_FULL;
  return isConnectionFailure(err) || isRedisFull(err);
}

export interface PersistOptions {
  log: Logger;
  /** Logged once, on the first refusal, with `fields`. */
  what: string;
  fields: Record<string, unknown>;
  /** Told of each refusal (the worker's link learns that Redis is full). */
  observe?: ((err: unknown) => void) | undefined;
  /** Aborted when the worker gives up (its drain deadline): the last error is thrown. */
  giveUp?: AbortSignal | undefined;
}

/**
 * Runs `write` until it lands: a refusal because Redis was out of reach or full is sent again after
 * a backoff (the scripts that write outcomes are replay-safe and fenced on the attempt, so a resend
 * after a lost reply, or after another worker took over, writes nothing twice); any other error is
 * thrown at once.
 */
export async function persist<T>(write: () => Promise<T>, options: PersistOptions): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (!worthResending(err)) throw err;
      options.observe?.(err);
      if (attempt === 0)
        options.log.warn(`${options.what} not written (Redis full or out of reach): sending it again until it lands`, { ...options.fields, err });
      try {
        // Rejects at once when the worker has given up already: the refusal is what the caller hears.
        await sleep(exponentialDelay(PERSIST_BACKOFF, attempt), options.giveUp);
      } catch {
        throw err;
      }
    }
  }
}
