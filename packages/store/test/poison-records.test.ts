// Records written straight into Redis by a buggy or hostile producer: one bad task in a batch of
// good ones is taken out of the batch (nothing of it written, then dead-lettered and failed by its
// own call) while the good ones proceed, and no entry stays pending.
import { Broker } from "@flotilla/broker";
import { CONSUMER_GROUP, createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { StartReply } from "../src/replies.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const sub = testRedis();
const prefix = testPrefix("poison-records");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
/** Status events published, by task id. */
const published = new Map<string, Array<Record<string, unknown>>>();
beforeAll(async () => {
  await sub.psubscribe(`${prefix}:status:*`);
  sub.on("pmessage", (_p, _c, message: string) => {
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
  ["key not a hash", async (key) => (await redis.del(key), redis.set(key, "not a hash")), /the key is not a hash \(WRONGTYPE\)/, false],
];

let n = 0;

/** Four good tasks and a bad one in the middle of the same lane: returns their names. */
async function batchWithPoison(queue: string, poison: Poison): Promise<{ good: string[]; bad: string }> {
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
      const { outcomes } = await store.settle(
        queue,
        "w",
        runs.map((r) => ({
          taskId: r.taskId,
          priority: r.priority,
          entryId: r.entryId,
          attempt: r.attempt,
          status: "COMPLETED" as const,
          agent: "a",
          result: 1,
        })),
      );
      expect(outcomes.map((o) => o.ok && o.status)).toEqual(["COMPLETED", "COMPLETED", "COMPLETED", "COMPLETED"]);
      for (const name of good) expect(await redis.hget(keys.task(`${queue}/${name}`), "status")).toBe("COMPLETED");
      expect(await pendingCount(queue)).toBe(0);
    });
  }

  it("a record that does not parse as a number in a start of held entries (start-4) is taken out the same way", async () => {
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
