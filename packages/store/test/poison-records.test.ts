// Records written straight into Redis by a buggy or hostile producer: one bad task in a batch of
// good ones is taken out of the batch (nothing of it written, then dead-lettered and failed by its
// own call) while the good ones proceed, and no entry stays pending.
import { Broker } from "@flotilla/broker";
import { CONSUMER_GROUP, createKeys, DEFAULT_RETENTION, type Priority } from "@flotilla/core";
import { openRedis } from "@flotilla/core/redis";
import { purgePrefix, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TaskEventLog } from "../src/event-log.ts";
import { readFields } from "../src/readers.ts";
import type { StartReply } from "../src/replies.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
// A subscriber connection as Flotilla opens one (sharded subscribers on a cluster run).
const sub = openRedis(testConnection(), "subscriber").redis;
const prefix = testPrefix("poison-records");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
/** Status events published, by task id. */
const published = new Map<string, Array<Record<string, unknown>>>();
beforeAll(() => {
  sub.on("smessage", (_channel: string, message: string) => {
    for (const e of JSON.parse(message) as Array<Record<string, unknown>>) {
      published.set(String(e.taskId), [...(published.get(String(e.taskId)) ?? []), e]);
    }
  });
});
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await sub.quit();
  await redis.quit();
});

type Poison = (key: string) => Promise<unknown>;
const fields =
  (f: Record<string, string>): Poison =>
  (key) =>
    redis.hset(key, f);

/** [what, how the record is spoilt, what the reason must say, whether the record can be ended FAILED]. */
const cases: Array<[string, Poison, RegExp, boolean]> = [
  ["attempt not a number", fields({ attempt: "abc" }), /attempt is not a number/, true],
  ["createdAt not a number", fields({ createdAt: "yesterday" }), /createdAt is not a number/, true],
  ["seq not a number", fields({ seq: "1.5" }), /seq is not a number/, true],
  ["maxDeliveries negative", fields({ maxDeliveries: "-1" }), /maxDeliveries is not a number/, true],
  ["deliveriesBase not a number", fields({ deliveriesBase: "x" }), /deliveriesBase is not a number/, true],
  ["retries not a number", fields({ retries: "NaN" }), /retries is not a number/, true],
  ["maxRetries not a number", fields({ maxRetries: "many" }), /maxRetries is not a number/, true],
  ["timeoutMs not a number", fields({ timeoutMs: "10s" }), /timeoutMs is not a number/, true],
  ["attempt too long for a double", fields({ attempt: "12345678901234567890" }), /attempt is not a number/, true],
  ["cancelRequestedAt not a number", fields({ cancelRequestedAt: "soon" }), /cancelRequestedAt is not a number/, true],
  ["taskId missing", (key) => redis.hdel(key, "taskId"), /taskId is missing/, true],
  ["taskId with a quote (spliced into JSON)", fields({ taskId: 'pr/x","status":"completed' }), /taskId is not a task id/, true],
  ["unknown status", fields({ status: "WEIRD" }), /status is unknown/, true],
  ["garbage log", fields({ log: "not json at all" }), /log is not a list of events/, true],
  ["key not a hash", (key) => redis.multi().del(key).set(key, "not a hash").exec(), /the key is not a hash \(WRONGTYPE\)/, false],
];

let n = 0;

/** Four good tasks and a bad one in the middle of the same lane: returns their names. */
async function batchWithPoison(queue: string, poison: Poison): Promise<{ good: string[]; bad: string }> {
  // Status channels are sharded (one per queue, in its slot): listen to this queue's.
  await sub.ssubscribe(keys.statusChannel(queue));
  n++;
  const good = [`g${n}a`, `g${n}b`, `g${n}c`, `g${n}d`];
  await broker.ensureGroup(queue);
  await store.createMany(queue, [newTask(`${queue}/${good[0]}`), newTask(`${queue}/${good[1]}`)]);
  const bad = await store.writeRaw(`${queue}/bad${n}`);
  await poison(keys.task(`${queue}/${bad}`));
  await redis.xadd(keys.lane(queue, "normal"), "*", "task", bad);
  await store.createMany(queue, [newTask(`${queue}/${good[2]}`), newTask(`${queue}/${good[3]}`)]);
  return { good, bad };
}

/** What Redis holds under a key, whatever its type. */
async function snapshot(key: string): Promise<unknown> {
  return (await redis.type(key)) === "hash" ? redis.hgetall(key) : redis.get(key);
}

async function pendingCount(queue: string): Promise<number> {
  return ((await redis.xpending(keys.lane(queue, "normal"), CONSUMER_GROUP)) as [number])[0];
}

describe("a corrupt task record in a claim batch", () => {
  for (const [what, poison, reason, fails] of cases) {
    it(`${what}: the good tasks start and complete, the bad one is dead-lettered with a reason, its waiters told`, async () => {
      const queue = `pr${n + 1}`;
      const { good, bad } = await batchWithPoison(queue, poison);
      const badId = `${queue}/${bad}`;
      const before = await snapshot(keys.task(badId));
      const replies = await store.claim(queue, "w", 5);
      expect(replies.map((r) => r.kind)).toEqual(["run", "run", "corrupt", "run", "run"]);
      const corrupt = replies[2] as Extract<StartReply, { kind: "corrupt" }>;
      expect(corrupt).toMatchObject({ taskId: badId });
      expect(corrupt.reason).toMatch(reason);
      // Nothing of the bad task was written by the claim.
      expect(await snapshot(keys.task(badId))).toEqual(before);

      // The worker's next call takes it out: dead-lettered with the reason, the record failed.
      expect(await store.failCorrupt({ queue, priority: "normal" }, corrupt.entryId, "w", badId, `corrupt task record: ${corrupt.reason}`)).toEqual({
        moved: true,
        failed: fails,
      });
      const [letter] = await broker.listDeadLetters(queue);
      expect(letter).toMatchObject({ entryId: corrupt.entryId, taskId: badId, fields: { task: bad } });
      expect(letter!.reason).toMatch(reason);
      if (fails) {
        // The original bad values are kept in the letter.
        const kept = (letter!.extra as { record: Record<string, string> }).record;
        for (const [field, value] of Object.entries(before as Record<string, string>)) {
          if (field in kept) expect(kept[field]).toBe(value);
        }
        const [status, error] = await redis.hmget(keys.task(badId), "status", "error");
        expect(status).toBe("FAILED");
        expect(JSON.parse(error!)).toMatchObject({ code: "CORRUPT_RECORD" });
        const events = await waitFor(() => published.get(badId), { what: "the bad task's status event" });
        expect(events).toEqual([expect.objectContaining({ status: "failed", taskId: badId, error: expect.objectContaining({ code: "CORRUPT_RECORD" }) })]);
      } else {
        expect(letter!.extra).toMatchObject({ keyType: "string" });
        expect(await redis.get(keys.task(badId))).toBe("not a hash");
      }

      // The good ones ran as any batch does.
      const runs = replies.filter((r) => r.kind === "run");
      const { outcomes } = await store.settle(queue, "w", runs.map(completed));
      expect(outcomes.map((o) => o.ok && o.status)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"]);
      for (const name of good) expect(await redis.hget(keys.task(`${queue}/${name}`), "status")).toBe("COMPLETED");
      expect(await pendingCount(queue)).toBe(0);
    });
  }

  it("the FAILED event of a taken-out record goes on from its seq when that is sound, and starts afresh when it is not", async () => {
    for (const [queue, spoilt, expectedSeq] of [
      ["pr-seq-sound", { attempt: "x", seq: "4", log: '{"seq":4}' }, 5],
      ["pr-seq-bad", { seq: "four" }, 1],
    ] as const) {
      const { bad } = await batchWithPoison(queue, fields(spoilt));
      const badId = `${queue}/${bad}`;
      const corrupt = (await store.claim(queue, "w", 5)).find((r) => r.kind === "corrupt")!;
      await store.failCorrupt({ queue, priority: "normal" }, corrupt.entryId, "w", badId, "corrupt task record");
      const events = await waitFor(() => published.get(badId), { what: "the bad task's status event" });
      expect(events.map((e) => e.seq)).toEqual([expectedSeq]);
    }
  });

  it("a record that does not parse as a number in a start of held entries (start-5) is taken out the same way", async () => {
    const queue = "pr-start";
    const { bad } = await batchWithPoison(queue, fields({ seq: "x" }));
    const read = (await redis.xreadgroup("GROUP", CONSUMER_GROUP, "w", "COUNT", 5, "STREAMS", keys.lane(queue, "normal"), ">")) as Array<
      [string, Array<[string, string[]]>]
    >;
    const entries = read[0]![1].map(([entryId, f]) => ({ priority: "normal" as const, entryId, name: f[1]! }));
    const replies = await store.startEntries(queue, "w", entries, false);
    expect(replies.map((r) => r.kind)).toEqual(["run", "run", "corrupt", "run", "run"]);
    expect(replies[2]).toMatchObject({ taskId: `${queue}/${bad}`, reason: "seq is not a number" });
  });
});

/** The COMPLETED outcome of a started task's attempt. */
function completed(r: { taskId: string; priority: Priority; entryId: string; attempt: number }) {
  return { taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, status: "COMPLETED" as const, agent: "a", result: 1 };
}

/** A task of `queue` claimed and started by consumer "w". */
async function running(queue: string, count: number) {
  await broker.ensureGroup(queue);
  n++;
  await store.createMany(
    queue,
    Array.from({ length: count }, (_, i) => newTask(`${queue}/r${n}-${i}`)),
  );
  const runs = await store.claim(queue, "w", count);
  return runs.map((r) => {
    if (r.kind !== "run") throw new Error(`expected a run, got ${r.kind}`);
    return r;
  });
}

describe("a record that went bad while its task ran", () => {
  it("settle-12: the corrupt one is refused with a reason and nothing written; the others of the batch settle; then it is taken out", async () => {
    const queue = "pr-settle";
    const runs = await running(queue, 4);
    const badKey = keys.task(runs[1]!.taskId);
    await redis.hset(badKey, "seq", "x");
    const before = await redis.hgetall(badKey);
    const { outcomes } = await store.settle(queue, "w", runs.map(completed));
    expect(outcomes).toEqual([
      { ok: true, status: "COMPLETED", deadLettered: false },
      { ok: false, reason: "corrupt", status: undefined, detail: "seq is not a number" },
      { ok: true, status: "COMPLETED", deadLettered: false },
      { ok: true, status: "COMPLETED", deadLettered: false },
    ]);
    expect(await redis.hgetall(badKey)).toEqual(before);
    expect(await pendingCount(queue)).toBe(1);
    expect(await store.failCorrupt({ queue, priority: "normal" }, runs[1]!.entryId, "w", runs[1]!.taskId, "corrupt task record: seq is not a number")).toEqual({
      moved: true,
      failed: true,
    });
    expect(await redis.hget(badKey, "status")).toBe("FAILED");
    expect(await pendingCount(queue)).toBe(0);
  });

  it("publish-1: a bad seq or scope mark is refused with CORRUPT_RECORD and nothing is written", async () => {
    const [run] = await running("pr-publish", 1);
    const key = keys.task(run!.taskId);
    const log = new TaskEventLog(redis, keys, DEFAULT_RETENTION, run!.taskId);
    await redis.hset(key, "seq", "1e3");
    const before = await redis.hgetall(key);
    await expect(log.append(run!.attempt, "1:1", ['{"type":"text"}'])).rejects.toMatchObject({ code: "CORRUPT_RECORD", message: /seq is not a number/ });
    expect(await redis.hgetall(key)).toEqual(before);
    expect(await redis.exists(keys.events(run!.taskId))).toBe(0);
    await redis.hset(key, "seq", "3", "hw:tool", "many");
    await expect(log.append(run!.attempt, "scope=tool:1", ['{"type":"text"}'])).rejects.toMatchObject({
      code: "CORRUPT_RECORD",
      message: /hw:tool is not a number/,
    });
    expect(await redis.hget(key, "seq")).toBe("3");
  });

  it("requeue-4: a dead-lettered task whose record is corrupt is refused with CORRUPT_RECORD; the letter stays", async () => {
    const queue = "pr-requeue";
    const [run] = await running(queue, 1);
    await store.settle(queue, "w", [
      {
        taskId: run!.taskId,
        priority: "normal",
        entryId: run!.entryId,
        attempt: 1,
        status: "FAILED",
        agent: "a",
        error: { code: "X", message: "no" },
        deadReason: "no",
      },
    ]);
    const [letter] = await broker.listDeadLetters(queue);
    await redis.hset(keys.task(run!.taskId), "attempt", "one");
    await expect(store.requeueDeadLetter({ queue, priority: "normal", id: letter!.id, taskId: run!.taskId })).rejects.toMatchObject({
      code: "CORRUPT_RECORD",
      message: /attempt is not a number/,
    });
    expect(await redis.hget(keys.task(run!.taskId), "status")).toBe("FAILED");
    expect(await broker.listDeadLetters(queue)).toHaveLength(1);
  });

  it("create-8: a caller-chosen name held by a key that is no hash is taken; the rest of the batch is created", async () => {
    const queue = "pr-create";
    await redis.set(keys.task(`${queue}/held`), "x");
    const { created } = await store.createMany(queue, [newTask(`${queue}/held`, { submitId: "s1" }), newTask(`${queue}/free`, { submitId: "s2" })]);
    expect(created).toEqual([false, true]);
    expect(await redis.hget(keys.task(`${queue}/free`), "status")).toBe("PENDING");
  });
});

describe("a final outcome after earlier attempts (issue 13 item 8)", () => {
  it("a task that completes after a failed attempt keeps no error nor retry time", async () => {
    const queue = "pr-final";
    const [run] = await running(queue, 1);
    const settle = (status: "RETRYING" | "COMPLETED", attempt: number, entryId: string) =>
      store.settle(queue, "w", [
        {
          taskId: run!.taskId,
          priority: "normal",
          entryId,
          attempt,
          status,
          agent: "a",
          ...(status === "RETRYING" ? { error: { code: "X", message: "first try failed" }, retryAt: Date.now() } : { result: "ok" }),
        },
      ]);
    await settle("RETRYING", 1, run!.entryId);
    expect(await redis.hmget(keys.task(run!.taskId), "error", "retryAt")).not.toContain(null);
    const second = await store.start(run!.taskId, "w");
    expect(second).toMatchObject({ kind: "run", attempt: 2 });
    await settle("COMPLETED", 2, "");
    expect(await readFields(redis, keys, run!.taskId, ["status", "result", "error", "retryAt"])).toEqual(["COMPLETED", '"ok"', null, null]);
    expect((await store.get(run!.taskId))?.error).toBeUndefined();
  });

  it("a task that fails for good after a result was stored keeps no stale result", async () => {
    const queue = "pr-final2";
    const [run] = await running(queue, 1);
    await store.settle(queue, "w", [
      { taskId: run!.taskId, priority: "normal", entryId: run!.entryId, attempt: 1, status: "RETRYING", agent: "a", retryAt: Date.now() },
    ]);
    // A result left by an earlier attempt (a producer's or an older version's write).
    await redis.hset(keys.task(run!.taskId), "result", '"stale"');
    await store.start(run!.taskId, "w");
    await store.settle(queue, "w", [
      { taskId: run!.taskId, priority: "normal", entryId: "", attempt: 2, status: "FAILED", agent: "a", error: { code: "X", message: "no" } },
    ]);
    expect(await redis.hmget(keys.task(run!.taskId), "status", "result", "retryAt")).toEqual(["FAILED", null, null]);
  });
});
