// The broker when Redis lost a queue's lanes and consumer groups (restarted without persistence,
// failed over to an empty replica): reads fail with NOGROUP (isMissingGroup), writes that need the
// group find nothing of theirs and fail nothing, and ensureGroup(…, { again: true }) makes them again.
import { CONSUMER_GROUP, createKeys } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { isMissingGroup } from "../src/broker.ts";
import { laneKeys } from "../src/lanes.ts";
import { TestBroker } from "../src/testing.ts";

const redis = testRedis();
const blocking = testRedis();
const prefix = testPrefix("broker-lost");
const keys = createKeys(prefix);
const broker = new TestBroker(redis, keys);
const lane = (queue: string) => ({ queue, priority: "normal" as const });
const loseLanes = (queue: string) => redis.del(...laneKeys(keys, queue));
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
  await blocking.quit();
});

describe("Broker after Redis lost a queue's consumer groups", () => {
  it("the blocking read and the reclaim scan fail with NOGROUP, which isMissingGroup knows", async () => {
    await broker.ensureGroup("r");
    await loseLanes("r");
    const read = await broker.block(blocking, "c", ["r"], 1, 100).catch((err: unknown) => err);
    const scan = await broker.reclaim(lane("r"), "c", 0, 1).catch((err: unknown) => err);
    expect([isMissingGroup(read), isMissingGroup(scan)]).toEqual([true, true]);
    expect(isMissingGroup(new Error("WRONGTYPE Operation against a key holding the wrong kind of value"))).toBe(false);
    expect(isMissingGroup("NOGROUP as a string")).toBe(false);
  });

  it("ensureGroup is done once per queue, again only when asked, and makes all three lanes in one step", async () => {
    await broker.ensureGroup("e");
    await loseLanes("e");
    await broker.ensureGroup("e"); // remembered: nothing sent
    expect(await redis.exists(...laneKeys(keys, "e"))).toBe(0);
    await broker.ensureGroup("e", { again: true });
    for (const key of laneKeys(keys, "e")) expect(((await redis.xinfo("GROUPS", key)) as unknown[][]).map((g) => g[1])).toEqual([CONSUMER_GROUP]);
    // A lane that kept its stream but lost its group gets the group back, reading from the start.
    const id = await broker.enqueue("e", "kept");
    await redis.xgroup("DESTROY", keys.lane("e", "normal"), CONSUMER_GROUP);
    await broker.ensureGroup("e", { again: true });
    expect((await broker.claim(blocking, "c", ["e"], 5, 100)).map((e) => e.entryId)).toEqual([id]);
  });

  it("renewing and dead-lettering entries whose group is gone find them no one's, and fail nothing", async () => {
    await broker.ensureGroup("w");
    await broker.enqueue("w", "held");
    const [entry] = await broker.claim(blocking, "c", ["w"], 1, 100);
    await loseLanes("w");
    expect(await broker.renew(lane("w"), "c", [entry!.entryId])).toEqual([entry!.entryId]);
    expect(await broker.deadLetter(lane("w"), entry!.entryId, "c", { reason: "x", fields: {} })).toBe(false);
    expect(await broker.listDeadLetters("w")).toEqual([]);
  });

  it("promotion into a lane that is gone makes it again with its group, so the task is read", async () => {
    await broker.ensureGroup("d");
    await redis.zadd(keys.delayed("d", "high"), Date.now() - 1, "due");
    await loseLanes("d");
    expect(await broker.promote("d")).toMatchObject({ moved: 1 });
    const [entry] = await broker.claim(blocking, "c", ["d"], 1, 100);
    expect(entry).toMatchObject({ priority: "high", fields: { task: "due" } });
  });
});
