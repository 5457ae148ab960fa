import type { Redis } from "ioredis";
import { answeredWhenReady } from "./when-ready.ts";

/**
 * Redis's clock, in ms since the epoch (`TIME`). Judgements that compare times written by different
 * processes — is a worker's last beat recent, is a retry due — read this one clock, so a process
 * whose own clock is ahead or behind cannot make a live worker look dead or a delay shrink or grow.
 */
export async function redisTime(redis: Pick<Redis, "pipeline">): Promise<number> {
  const [seconds, micros] = await answeredWhenReady<[string, string]>(redis, (p) => p.time());
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
}
