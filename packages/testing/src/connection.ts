import { Redis } from "ioredis";

/** The Redis tests run against: REDIS_URL, else the local default. */
export const redisUrl = (): string => process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * A plain ioredis connection for a test's own reads and writes (assertions, corrupting records).
 * It connects on its first command, so an unused one costs nothing; `quit()` it when done.
 */
export function testRedis(url: string = redisUrl()): Redis {
  return new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
}
