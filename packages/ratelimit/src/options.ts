import { parseInput, SAFE_ID } from "@flotilla/core";
import { z } from "zod";

/** One fleet-wide rate limit, configured the same on every worker that draws on it. */
export const RateLimitOptionsSchema = z
  .object({
    /** What agents (`rateLimit`) and tools name it by. */
    name: z.string().min(1).max(128).regex(SAFE_ID, "use letters, digits and _ . : - only"),
    /** Requests granted per minute. @default undefined: requests not limited */
    requestsPerMinute: z.number().positive().optional(),
    /** Tokens (estimated, then settled with the usage) granted per minute. @default undefined: tokens not limited */
    tokensPerMinute: z.number().positive().optional(),
    /** The most requests that may go at once after a quiet spell. @default one second's worth, at least 1 */
    requestBurst: z.number().positive().optional(),
    /** The most tokens that may go at once after a quiet spell. @default one second's worth, at least one request's estimate */
    tokenBurst: z.number().positive().optional(),
    /**
     * A call that would wait longer than this (ms) for the limit does not wait on its worker: the
     * task stops (WAITING, kind `rate-limit`, no worker slot held) and comes back by itself when the
     * limit can grant, then asks again (nothing is reserved meanwhile).
     * @default undefined: a call waits on its worker, its lease kept alive, however long
     */
    releaseSlotAfterMs: z.number().int().positive().optional(),
  })
  .strict()
  .refine((o) => o.requestsPerMinute !== undefined || o.tokensPerMinute !== undefined, {
    message: "give requestsPerMinute, tokensPerMinute or both",
    path: ["requestsPerMinute"],
  });
export type RateLimitOptions = z.input<typeof RateLimitOptionsSchema>;

/** A limit with its defaults applied. */
export interface ResolvedRateLimit {
  name: string;
  requestsPerMinute: number;
  tokensPerMinute: number;
  requestBurst: number;
  tokenBurst: number;
  releaseSlotAfterMs: number | undefined;
}

/** The one place a limit's defaults are applied: 0 per minute means not limited. */
export function resolveRateLimit(options: RateLimitOptions): ResolvedRateLimit {
  const o = parseInput(RateLimitOptionsSchema, options, "rate limit");
  const rpm = o.requestsPerMinute ?? 0;
  const tpm = o.tokensPerMinute ?? 0;
  return {
    name: o.name,
    requestsPerMinute: rpm,
    tokensPerMinute: tpm,
    requestBurst: o.requestBurst ?? Math.max(1, rpm / 60),
    tokenBurst: o.tokenBurst ?? Math.max(1, tpm / 60),
    releaseSlotAfterMs: o.releaseSlotAfterMs,
  };
}
