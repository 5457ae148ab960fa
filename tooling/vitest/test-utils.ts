import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";

export const redisUrl = (): string => process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** A key prefix no other test (or test run) shares; never flush the shared Redis. */
export const testPrefix = (name: string): string => `flt-test:${name}:${randomBytes(4).toString("hex")}`;

export function testRedis(): Redis {
  return new Redis(redisUrl(), { maxRetriesPerRequest: 3, lazyConnect: false });
}

/** Removes every key under a test prefix. */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix}:*`, "COUNT", 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== "0");
}

/** Re-checks a condition until it holds; for waiting on other processes in tests only. */
export async function waitFor<T>(
  check: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  { timeoutMs = 10_000, intervalMs = 20, what = "condition" } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
