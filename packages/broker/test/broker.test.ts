import { CONSUMER_GROUP, createKeys } from "@flotilla/core";
import { onCluster, purgePrefix, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { parseEntry } from "../src/entry.ts";
import { TestBroker } from "../src/testing.ts";

const redis = testRedis();
const blocking = testRedis();
const prefix = testPrefix("broker");
const keys = createKeys(prefix);
const broker = new TestBroker(redis, keys);
const lane = (queue: string) => ({ queue, priority: "normal" as const });
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
  await blocking.quit();
});

describe("Broker", () => {
  it("delivers entries added before the group existed", async () => {
    await broker.enqueue("early", "t1");
    await broker.enqueue("early", "t2");
    await broker.ensureGroup("early");
    await broker.ensureGroup("early"); // idempotent
    const entries = await broker.claim(blocking, "c1", ["early"], 10, 100);
    expect(entries.map((e) => parseEntry(e))).toMatchObject([
      { ok: true, name: "t1", taskId: "early/t1" },
      { ok: true, name: "t2", taskId: "early/t2" },
    ]);
  });

  it("counts waiting, in-flight and delayed entries", async () => {
    await broker.ensureGroup("depth");
    await broker.enqueue("depth", "a");
    await broker.enqueue("depth", "b");
    await redis.zadd(keys.delayed("depth", "low"), Date.now() + 60_000, "c");
    await broker.claim(blocking, "c1", ["depth"], 1, 100);
    expect(await broker.depth("depth")).toMatchObject({ waiting: 1, inFlight: 1, delayed: 1 });
  });

  it("says how long the oldest waiting entry has waited (the queue's lag), on Redis's clock; 0 when none waits", async () => {
    await broker.ensureGroup("lag");
    expect((await broker.depth("lag")).oldestWaitMs).toBe(0);
    await broker.enqueue("lag", "old", "low");
    await new Promise((r) => setTimeout(r, 300));
    await broker.enqueue("lag", "new", "high");
    const both = await broker.depth("lag");
    expect(both.oldestWaitMs).toBeGreaterThanOrEqual(290);
    expect(both.oldestWaitMs).toBeLessThan(5_000);
    // Once the old one is delivered, the lag is the newer one's wait; once both are, none.
    await broker.claim(blocking, "c1", ["lag"], 1, 100, { order: ["low", "normal", "high"] });
    expect((await broker.depth("lag")).oldestWaitMs).toBeLessThan(both.oldestWaitMs - 250);
    await broker.claim(blocking, "c1", ["lag"], 1, 100);
    expect(await broker.depth("lag")).toMatchObject({ waiting: 0, inFlight: 2, oldestWaitMs: 0 });
  });

  // On a cluster the queues lie in different slots, which one read cannot name (see MULTI_SLOT_BLOCK_MS).
  it.skipIf(onCluster())("claims across several queues in one blocking call", async () => {
    await broker.ensureGroup("x");
    await broker.ensureGroup("y");
    const id = await blocking.client("ID");
    const claiming = broker.claim(blocking, "c1", ["x", "y"], 10, 5000);
    // Enqueue only once the claim is blocked (its lanes were empty), or it would find the entry without blocking.
    const blocked = async () => String(await redis.client("LIST", "ID", String(id))).includes("flags=b");
    await waitFor(blocked, { what: "the claim to block" });
    await broker.enqueue("y", "ty");
    const entries = await claiming;
    expect(entries).toMatchObject([{ queue: "y" }]);
  });

  it("renews only the leases a consumer still owns, and reclaims lapsed ones across the whole pending list", async () => {
    await broker.ensureGroup("lease");
    for (let i = 0; i < 7; i++) await broker.enqueue("lease", `t${i}`);
    const held = await broker.claim(blocking, "old", ["lease"], 7, 100);
    const ids = held.map((e) => e.entryId);
    await new Promise((r) => setTimeout(r, 60));
    expect(await broker.renew(lane("lease"), "old", ids.slice(0, 2))).toEqual([]); // these two are fresh again
    // Three at a time, oldest first: only the five idle ones move to "new".
    const moved: string[] = [];
    for (let page = 0; page < 3; page++) moved.push(...(await broker.reclaim(lane("lease"), "new", 50, 3)).entries.map((e) => e.entryId));
    expect(moved).toEqual(ids.slice(2));
    // "old" has lost those five: renewing them says so, and does not steal them back.
    expect(await broker.renew(lane("lease"), "old", ids)).toEqual(ids.slice(2));
    const owners = (await redis.xpending(keys.queue("lease"), CONSUMER_GROUP, "-", "+", 10)) as Array<[string, string]>;
    expect(owners.map(([, c]) => c)).toEqual(["old", "old", "new", "new", "new", "new", "new"]);
  });

  it("takes the oldest lapsed entry first, whatever an earlier scan took: one that lapses after newer ones is not left behind", async () => {
    await broker.ensureGroup("oldest");
    for (let i = 0; i < 25; i++) await broker.enqueue("oldest", `o${i}`);
    const held = (await broker.claim(blocking, "dead", ["oldest"], 25, 100)).map((e) => e.entryId);
    const [first, ...newer] = held as [string, ...string[]];
    const idle = (id: string, ms: number) => redis.xclaim(keys.queue("oldest"), CONSUMER_GROUP, "dead", 0, id, "IDLE", ms, "JUSTID");
    // The newer ones lapsed (their worker died); the oldest is still renewed by its worker.
    for (const id of newer) await idle(id, 10_000);
    await idle(first, 0);
    const taken = async () => (await broker.reclaim(lane("oldest"), "live", 1000, 1)).entries.map((e) => e.entryId);
    expect(await taken()).toEqual([newer[0]]);
    expect(await taken()).toEqual([newer[1]]);
    // Now its worker dies too: the next scan takes it before the twenty-two newer ones still waiting.
    await idle(first, 10_000);
    expect(await taken()).toEqual([first]);
    expect(await taken()).toEqual([newer[2]]);
  });

  it("passes over the entries of a live worker with a longer lease to take a lapsed one behind them, in one scan", async () => {
    await broker.ensureGroup("behind");
    for (let i = 0; i < 30; i++) await broker.enqueue("behind", `b${i}`);
    const live = (await broker.claim(blocking, "long", ["behind"], 25, 100)).map((e) => e.entryId);
    const [dead] = (await broker.claim(blocking, "gone", ["behind"], 1, 100)).map((e) => e.entryId);
    await redis.hset(keys.leases("behind"), "long", "60000");
    for (const id of [...live, dead!]) await redis.xclaim(keys.queue("behind"), CONSUMER_GROUP, id === dead ? "gone" : "long", 0, id, "IDLE", 5000, "JUSTID");
    // Idle past the scanner's 1 s lease, but not past their holder's 60 s: twenty-five passed over (a window of ten at a time).
    expect((await broker.reclaim(lane("behind"), "short", 1000, 1)).entries.map((e) => e.entryId)).toEqual([dead]);
  });

  it("takes an entry over only once it has been idle for its holder's lease, not merely the reclaimer's", async () => {
    await broker.ensureGroup("mixed");
    for (let i = 0; i < 4; i++) await broker.enqueue("mixed", `m${i}`);
    const long = await broker.claim(blocking, "long", ["mixed"], 2, 100);
    const anon = await broker.claim(blocking, "anon", ["mixed"], 2, 100);
    // "long" runs with a 60 s lease and says so (every reclaim scan records the scanner's lease).
    expect((await broker.reclaim(lane("mixed"), "long", 60_000, 10)).entries).toEqual([]);
    expect(await redis.hget(keys.leases("mixed"), "long")).toBe("60000");
    await new Promise((r) => setTimeout(r, 150));
    // A worker with a 50 ms lease: the entries of "long" are idle past 50 ms but well inside its 60 s lease.
    const taken = await broker.reclaim(lane("mixed"), "short", 50, 10);
    expect(taken.entries.map((e) => e.entryId)).toEqual(anon.map((e) => e.entryId)); // "anon" recorded no lease: the reclaimer's own applies
    const owners = (await redis.xpending(keys.queue("mixed"), CONSUMER_GROUP, "-", "+", 10)) as Array<[string, string]>;
    expect(owners.map(([id, c]) => [id, c])).toEqual([...long.map((e) => [e.entryId, "long"]), ...anon.map((e) => [e.entryId, "short"])]);
    // Once "long" is silent past its own lease, its entries go too.
    await redis.hset(keys.leases("mixed"), "long", "100");
    expect((await broker.reclaim(lane("mixed"), "short", 50, 10)).entries.map((e) => e.entryId)).toEqual(long.map((e) => e.entryId));
  });

  it("forgets consumers that hold nothing and have been silent, keeping busy, recent and its own", async () => {
    await broker.ensureGroup("crowd");
    for (let i = 0; i < 4; i++) await broker.enqueue("crowd", `c${i}`);
    const claimOne = async (consumer: string) => (await broker.claim(blocking, consumer, ["crowd"], 1, 100))[0]!.entryId;
    const settle = async (entryId: string) => redis.xack(keys.queue("crowd"), CONSUMER_GROUP, entryId);
    await claimOne("busy"); // holds its entry
    await settle(await claimOne("gone")); // ran one task, then went away
    await settle(await claimOne("me"));
    await broker.reclaim(lane("crowd"), "gone", 1000, 1); // records its lease
    await new Promise((r) => setTimeout(r, 200));
    await settle(await claimOne("recent"));
    expect(await broker.pruneConsumers("crowd", 150, "me")).toBe(1);
    const consumers = (await redis.xinfo("CONSUMERS", keys.queue("crowd"), CONSUMER_GROUP)) as string[][];
    expect(consumers.map((c) => c[1]).sort()).toEqual(["busy", "me", "recent"]);
    expect(await redis.hexists(keys.leases("crowd"), "gone")).toBe(0);
    // A lane without its group (Redis lost its data) has nothing to forget.
    expect(await broker.pruneConsumers("never-made", 0, "me")).toBe(0);
  });

  it("takes high before normal before low, and lets lower lanes go first when told to", async () => {
    await broker.ensureGroup("prio");
    for (const [i, p] of (["low", "normal", "high", "low", "high", "normal"] as const).entries()) await broker.enqueue("prio", `t${i}`, p);
    const first = await broker.claim(blocking, "c1", ["prio"], 3, 100);
    expect(first.map((e) => [e.priority, e.fields?.task])).toEqual([
      ["high", "t2"],
      ["high", "t4"],
      ["normal", "t1"],
    ]);
    const fair = await broker.claim(blocking, "c1", ["prio"], 2, 100, { order: ["low", "normal", "high"] });
    expect(fair.map((e) => e.fields?.task)).toEqual(["t0", "t3"]);
    expect(await broker.depth("prio")).toMatchObject({ waiting: 1, inFlight: 5, delayed: 0 });
  });

  it("dead-letters an entry with its reason and acknowledges it", async () => {
    await broker.ensureGroup("dl");
    await redis.xadd(keys.queue("dl"), "*", "garbage", "yes");
    const [raw] = await broker.claim(blocking, "c1", ["dl"], 1, 100);
    const parsed = parseEntry(raw!);
    expect(parsed.ok).toBe(false);
    if (parsed.ok) return;
    expect(await broker.deadLetter(lane("dl"), parsed.entryId, "intruder", { reason: "not mine", fields: null })).toBe(false);
    expect(await broker.deadLetter(lane("dl"), parsed.entryId, "c1", { reason: parsed.reason, fields: parsed.fields })).toBe(true);
    const [letter] = await broker.listDeadLetters("dl");
    expect(letter).toMatchObject({ entryId: raw!.entryId, fields: { garbage: "yes" } });
    expect(letter!.reason).toMatch(/malformed queue entry/);
    const pending = (await redis.xpending(keys.queue("dl"), CONSUMER_GROUP)) as [number];
    expect(pending[0]).toBe(0);
    expect(await redis.xlen(keys.queue("dl"))).toBe(0);
  });
});

describe("parseEntry", () => {
  const cases: Array<[string, Record<string, string> | null, RegExp]> = [
    ["no fields", null, /no fields/],
    ["missing task", { foo: "bar" }, /task/],
    ["braces in id", { task: "a{b}" }, /task/],
    ["empty id", { task: "" }, /task/],
    ["extra field", { task: "ok", extra: "1" }, /extra|Unrecognized/i],
  ];
  for (const [name, fields, reason] of cases) {
    it(`rejects ${name}`, () => {
      const parsed = parseEntry({ queue: "q", priority: "normal", entryId: "1-1", fields });
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) expect(parsed.reason).toMatch(reason);
    });
  }
});
