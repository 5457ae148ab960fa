// @cluster: purgePrefix scans every master
import { afterAll, describe, expect, it } from "vitest";
import { purgePrefix, scanPrefix, testPrefix, testRedis } from "../src/index.ts";

describe("purgePrefix", () => {
  const redis = testRedis();
  const prefix = testPrefix("purge");
  /** Keys that share characters with the prefix but are not under it. */
  const neighbours = [`other-${prefix}:x`, `${prefix}2:x`, `${prefix}`, `${prefix}-tail:x`, `x:${prefix}:y`];
  afterAll(async () => {
    await Promise.all(neighbours.map((k) => redis.del(k)));
    await purgePrefix(redis, prefix);
    await redis.quit();
  });

  it("removes every key under the prefix, of every type and over many SCAN pages, and nothing else", async () => {
    // One command each (not a pipeline): on a cluster run the keys are in many slots.
    await Promise.all([
      ...Array.from({ length: 2500 }, (_, i) => redis.set(`${prefix}:str:${i}`, "v")),
      redis.hset(`${prefix}:task:{q}:1`, "status", "PENDING"),
      redis.xadd(`${prefix}:queue:{q}`, "*", "task", "1"),
      redis.zadd(`${prefix}:queue:{q}:delayed`, 1, "a"),
      redis.sadd(`${prefix}:queues`, "q"),
      redis.rpush(`${prefix}:memory:{c}`, "m"),
      ...neighbours.map((k) => redis.set(k, "keep")),
    ]);

    expect(await purgePrefix(redis, prefix)).toBe(2505);
    const left: string[] = [];
    for await (const batch of scanPrefix(redis, prefix)) left.push(...batch);
    expect(left).toEqual([]);
    expect((await Promise.all(neighbours.map((k) => redis.exists(k)))).reduce((a, b) => a + b, 0)).toBe(neighbours.length);
    expect(await purgePrefix(redis, prefix)).toBe(0);
  });

  it("treats glob characters in the prefix as themselves", async () => {
    const globby = `${prefix}-glob*?[ab]\\`;
    const lookalikes = [`${prefix}-globX?a:k`, `${prefix}-glob*?a:k`, `${prefix}-globzz[ab]\\:k`];
    await Promise.all([redis.set(`${globby}:k`, "v"), ...lookalikes.map((k) => redis.set(k, "keep"))]);
    try {
      expect(await purgePrefix(redis, globby)).toBe(1);
      expect(await redis.exists(`${globby}:k`)).toBe(0);
      expect((await Promise.all(lookalikes.map((k) => redis.exists(k)))).reduce((a, b) => a + b, 0)).toBe(lookalikes.length);
    } finally {
      await Promise.all([`${globby}:k`, ...lookalikes].map((k) => redis.del(k)));
    }
  });

  it("refuses an empty prefix", async () => {
    await expect(purgePrefix(redis, "")).rejects.toThrow(/must not be empty/);
  });
});
