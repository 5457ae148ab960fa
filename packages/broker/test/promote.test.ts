import { createKeys } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { parseEntry } from "../src/entry.ts";
import { TestBroker } from "../src/testing.ts";

const redis = testRedis();
const blocking = testRedis();
const prefix = testPrefix("promote");
const keys = createKeys(prefix);
const broker = new TestBroker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
  await blocking.quit();
});

describe("Broker.promote", () => {
  it("moves the due tasks of every lane into their lanes, and says when the next one is due", async () => {
    await broker.ensureGroup("p");
    await redis.zadd(keys.delayed("p", "high"), 100, "h1");
    await redis.zadd(keys.delayed("p", "low"), 200, "l1", 900, "l2");
    await redis.zadd(keys.delayed("p", "normal"), 700, "n2");
    expect(await broker.promote("p", 500)).toEqual({ moved: 2, nextDueAt: 700 });
    const claimed = await broker.claim(blocking, "c", ["p"], 10, 100);
    expect(claimed.map((e) => [e.priority, parseEntry(e).ok && parseEntry(e)])).toMatchObject([
      ["high", { name: "h1" }],
      ["low", { name: "l1" }],
    ]);
    expect(await broker.promote("p", 1000)).toEqual({ moved: 2, nextDueAt: undefined });
    expect(await broker.promote("p", 1000)).toEqual({ moved: 0, nextDueAt: undefined });
  });

  it("moves at most `max` per lane in one call", async () => {
    await redis.zadd(keys.delayed("m", "normal"), 1, "a", 2, "b", 3, "c");
    // "c" is left, overdue: the next is due now (10), so the caller promotes again at once.
    expect(await broker.promote("m", 10, 2)).toEqual({ moved: 2, nextDueAt: 10 });
  });
});

describe("Broker", () => {
  it("finds a dead letter by its id, and nothing for an id it does not hold", async () => {
    await broker.ensureGroup("gd");
    await broker.enqueue("gd", "t1");
    await broker.enqueue("gd", "t2");
    const [a, b] = await broker.claim(blocking, "c", ["gd"], 2, 100);
    const lane = { queue: "gd", priority: "normal" as const };
    await broker.deadLetter(lane, a!.entryId, "c", { reason: "first", fields: a!.fields, taskId: "gd/t1" });
    await broker.deadLetter(lane, b!.entryId, "c", { reason: "second", fields: b!.fields });
    const [first, second] = await broker.listDeadLetters("gd");
    expect(await broker.getDeadLetter("gd", second!.id)).toMatchObject({ reason: "second", entryId: b!.entryId, taskId: undefined });
    expect(await broker.getDeadLetter("gd", first!.id)).toMatchObject({ reason: "first", taskId: "gd/t1", priority: "normal" });
    expect(await broker.listDeadLetters("gd", { after: first!.id })).toMatchObject([{ reason: "second" }]);
    expect(await broker.getDeadLetter("gd", "1-1")).toBeUndefined(); // before the first
    expect(await broker.getDeadLetter("gd", `${Date.now() + 60_000}-0`)).toBeUndefined(); // after the last
  });

  it("takes a group another broker created for an existing one", async () => {
    await new TestBroker(redis, keys).ensureGroup("shared");
    await expect(new TestBroker(redis, keys).ensureGroup("shared")).resolves.toBeUndefined();
  });

  it("keeps an entry's lane on its dead letter", async () => {
    await broker.ensureGroup("hl");
    await broker.enqueue("hl", "t", "high");
    const [entry] = await broker.claim(blocking, "c", ["hl"], 1, 100);
    await broker.deadLetter({ queue: "hl", priority: "high" }, entry!.entryId, "c", { reason: "r", fields: entry!.fields, extra: { attempts: 2 } });
    expect(await broker.listDeadLetters("hl")).toMatchObject([{ priority: "high" }]);
  });

  it("fails promote and deadLetter on what Redis refuses, instead of reporting nothing done", async () => {
    await redis.set(keys.delayed("bad", "normal"), "x");
    await expect(broker.promote("bad")).rejects.toThrow(/WRONGTYPE/);
    await redis.set(keys.deadLetters("bad2"), "x");
    await broker.ensureGroup("bad2");
    await broker.enqueue("bad2", "t");
    const [entry] = await broker.claim(blocking, "c", ["bad2"], 1, 100);
    await expect(broker.deadLetter({ queue: "bad2", priority: "normal" }, entry!.entryId, "c", { reason: "r", fields: null })).rejects.toThrow(/WRONGTYPE/);
  });

  it("refuses a lane key that is not a stream, instead of taking it for an existing group", async () => {
    await redis.set(keys.lane("wrong", "high"), "x");
    await expect(new TestBroker(redis, keys).ensureGroup("wrong")).rejects.toThrow(/WRONGTYPE/);
  });
});

describe("Broker, from what others wrote", () => {
  it("reclaims from the start of the pending list when given no cursor", async () => {
    await broker.ensureGroup("rc");
    const lane = { queue: "rc", priority: "normal" as const };
    await redis.xadd(keys.lane("rc", "normal"), "*", "task", "t1");
    await broker.claim(blocking, "old", ["rc"], 10, 100);
    const { entries } = await broker.reclaim(lane, "new", 0, 10);
    expect(entries.map((e) => parseEntry(e).ok && parseEntry(e))).toMatchObject([{ name: "t1" }]);
  });

  it("reads a dead letter someone else wrote with fields missing, with plain defaults", async () => {
    const id = (await redis.xadd(keys.deadLetters("dl"), "*", "reason", "by hand")) as string;
    expect(await broker.getDeadLetter("dl", id)).toEqual({
      id,
      queue: "dl",
      priority: "normal",
      entryId: "",
      taskId: undefined,
      reason: "by hand",
      fields: null,
      at: 0,
      extra: {},
    });
    const bare = (await redis.xadd(keys.deadLetters("dl"), "*", "at", "5")) as string;
    expect(await broker.getDeadLetter("dl", bare)).toMatchObject({ reason: "", at: 5, fields: null });
  });
});
