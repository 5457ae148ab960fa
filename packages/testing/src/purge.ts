import { ValidationError } from "@flotilla/core";
import { everyMaster, isCluster } from "@flotilla/core/redis";
import type { Redis } from "ioredis";

/** SCAN MATCH pattern for the keys under `prefix`, its glob characters escaped so they match only themselves. */
export function prefixPattern(prefix: string): string {
  return `${prefix.replace(/[\\*?[\]]/g, "\\$&")}:*`;
}

/**
 * Every key under `prefix` (`<prefix>:…`, which is where every Flotilla key lives), one SCAN batch
 * at a time (on a cluster, master by master). Keys written during the scan may or may not be seen,
 * as with any SCAN.
 */
export async function* scanPrefix(redis: Redis, prefix: string, count = 1000): AsyncGenerator<string[], void, undefined> {
  if (!prefix) throw ValidationError.of("scanPrefix", "prefix", "must not be empty");
  if (isCluster(redis) && redis.status !== "ready") await redis.ping();
  for (const node of everyMaster(redis)) {
    let cursor = "0";
    do {
      const [next, keys] = await node.scan(cursor, "MATCH", prefixPattern(prefix), "COUNT", count);
      cursor = next;
      if (keys.length) yield keys;
    } while (cursor !== "0");
  }
}

/** Every key under `prefix`, sorted (on a cluster, from every master): for tests that check what was written. */
export async function keysUnder(redis: Redis, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for await (const batch of scanPrefix(redis, prefix)) out.push(...batch);
  return out.sort();
}

/**
 * Deletes every key under `prefix` (UNLINK, so large streams are freed in the background) and
 * returns how many went. Keys under any other prefix are untouched, including ones that merely
 * start with the same characters (`app` does not touch `app2:…`).
 */
export async function purgePrefix(redis: Redis, prefix: string): Promise<number> {
  let removed = 0;
  const cluster = isCluster(redis);
  for await (const keys of scanPrefix(redis, prefix)) {
    // A cluster refuses one UNLINK of keys in several slots: one call per key, batched by ioredis.
    if (cluster) removed += (await Promise.all(keys.map((k) => redis.unlink(k)))).reduce((a, b) => a + b, 0);
    else removed += await redis.unlink(...keys);
  }
  return removed;
}
