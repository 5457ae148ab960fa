// What Redis says of its memory: how much it uses, and the `maxmemory` it refuses writes beyond.
import type { Redis } from "ioredis";
import { everyMaster } from "./cluster.ts";
import { answeredWhenReady } from "./when-ready.ts";

export interface RedisMemory {
  /** `used_memory`: bytes Redis has allocated. */
  usedBytes: number;
  /** `maxmemory`: the limit (0: none). */
  maxBytes: number;
}

const field = (info: string, name: string): number => {
  const m = new RegExp(`^${name}:(\\d+)\\r?$`, "m").exec(info);
  return m ? Number(m[1]) : 0;
};

/** `INFO memory`'s reply, read: used_memory and maxmemory (0 when absent). */
export function parseMemoryInfo(info: string): RedisMemory {
  return { usedBytes: field(info, "used_memory"), maxBytes: field(info, "maxmemory") };
}

/**
 * Asks Redis for its memory (`INFO memory`: one command, answered as a PING is, even when Redis is
 * full). On a cluster, every master is asked and the fullest answers: a write to its slots is the
 * first to be refused.
 */
export async function readRedisMemory(redis: Redis): Promise<RedisMemory> {
  const all = await Promise.all(everyMaster(redis).map(async (node) => parseMemoryInfo(await answeredWhenReady<string>(node, (p) => p.info("memory")))));
  return all.reduce((a, b) => (fullness(b) > fullness(a) ? b : a));
}

/** How near its limit a node is (0..1), or, with no limit, a tiny share of its bytes so the largest wins. */
const fullness = (m: RedisMemory): number => (m.maxBytes > 0 ? m.usedBytes / m.maxBytes : m.usedBytes / Number.MAX_SAFE_INTEGER);

/**
 * Whether Redis would refuse a write that grows memory now (noeviction): a limit is set and used
 * memory has reached it. (Redis leaves its replication and AOF buffers out of the count; this does
 * not, so it says full a little early rather than late.)
 */
export const isFull = (m: RedisMemory): boolean => m.maxBytes > 0 && m.usedBytes >= m.maxBytes;

/** A byte count as people read it: `31.2 MB`. */
export const formatBytes = (n: number): string =>
  n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MB` : `${(n / 1024).toFixed(1)} KB`;
