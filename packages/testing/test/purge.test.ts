import { afterAll, describe, expect, it } from "vitest";
import { purgePrefix, scanPrefix, testPrefix, testRedis } from "../src/index.ts";

describe("purgePrefix", () => {
  const redis = testRedis();
  const prefix = testPrefix("purge");
  /** Keys that share characters with the prefix but are not under it. */
  const neighbours = [`other-${prefix}:x`, `${prefix}2:x`, `${prefix}`, `${prefix}-tail:x`, `x:${prefix}:y`];
  afterAll(async () => {
    await redis.del(...neighbours);
    await purgePrefix(redis, prefix);
    await redis.quit();
  });

  it("removes every key under the prefix, of every type and over many SCAN pages, and nothing else", async () => {
    const pipeline = redis.pipeline();
    for (let i = 0; i < 2500; i++) pipeline.set(`${prefix}:str:${i}`, "v");
    pipeline.hset(`${prefix}:task:{q}:1`, "status", "PENDING");
    pipeline.xadd(`${prefix}:queue:{q}`, "*", "task", "1");
    pipeline.zadd(`${prefix}:queue:{q}:delayed`, 1, "a");
    pipeline.sadd(`${prefix}:queues`, "q");
    pipeline.rpush(`${prefix}:memory:{c}`, "m");
    for (const k of neighbours) pipeline.set(k, "keep");
    await pipeline.exec();

    expect(await purgePrefix(redis, prefix)).toBe(2505);
    const left: string[] = [];
    for await (const batch of scanPrefix(redis, prefix)) left.push(...batch);
    expect(left).toEqual([]);
    expect(await redis.exists(...neighbours)).toBe(neighbours.length);
    expect(await purgePrefix(redis, prefix)).toBe(0);
  });

  it("treats glob characters in the prefix as themselves", async () => {
    const globby = `${prefix}-glob*?[ab]\\`;
    const lookalikes = [`${prefix}-globX?a:k`, `${prefix}-glob*?a:k`, `${prefix}-globzz[ab]\\:k`];
    await redis.mset(`${globby}:k`, "v", ...lookalikes.flatMap((k) => [k, "keep"]));
    try {
      expect(await purgePrefix(redis, globby)).toBe(1);
      expect(await redis.exists(`${globby}:k`)).toBe(0);
      expect(await redis.exists(...lookalikes)).toBe(lookalikes.length);
    } finally {
      await redis.del(`${globby}:k`, ...lookalikes);
    }
  });

  it("refuses an empty prefix", async () => {
    await expect(purgePrefix(redis, "")).rejects.toThrow(/must not be empty/);
  });
});
