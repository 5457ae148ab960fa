import { Broker } from "@flotilla/broker";
import { createKeys, DEFAULT_RETENTION, type Priority } from "@flotilla/core";
import { readFields, type SettleInput, type StartReply } from "@flotilla/store";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it, vi } from "vitest";
import { Settler } from "../src/settler.ts";

const redis = testRedis();
const prefix = testPrefix("settler");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** Starts `count` tasks of `queue` (with real entries held by "w") and returns their outcomes to settle. */
async function running(queue: string, count: number, status: SettleInput["status"] = "COMPLETED"): Promise<SettleInput[]> {
  await broker.ensureGroup(queue);
  await store.createMany(
    queue,
    Array.from({ length: count }, (_, i) => newTask(`${queue}/t${i}`)),
  );
  const runs = (await store.claim(queue, "w", count)).filter((r) => r.kind === "run");
  return runs.map((r) => ({ taskId: r.taskId, priority: r.priority, entryId: r.entryId, attempt: r.attempt, agent: "a", status, result: r.taskId }));
}

/** Hooks that record each batch: the queue it was for, and what it claimed. */
function recordingHooks(claim?: { count: number; order: readonly Priority[] }) {
  const asked: string[] = [];
  const started: Array<{ queue: string; replies: StartReply[]; asked: number }> = [];
  return {
    asked,
    started,
    hooks: {
      claim: (queue: string) => {
        asked.push(queue);
        return claim;
      },
      started: (queue: string, replies: StartReply[], n: number) => void started.push({ queue, replies, asked: n }),
    },
  };
}

describe("Settler", () => {
  it("writes the outcomes of one tick in one call per queue, and gives each caller its own", async () => {
    const a = await running("sa", 3);
    const b = await running("sb", 1);
    const { asked, started, hooks } = recordingHooks();
    const settler = new Settler(store, "w", hooks);
    const all = [...a.map((o) => settler.settle("sa", o)), ...b.map((o) => settler.settle("sb", o))];
    expect(settler.settling).toBe(4);
    const outcomes = await Promise.all(all);
    expect(outcomes).toEqual(Array(4).fill({ ok: true, status: "COMPLETED", deadLettered: false }));
    expect(settler.settling).toBe(0);
    expect(asked).toEqual(["sa", "sb"]);
    // Each queue's call answers on its own (on a cluster, from its own node): in either order.
    expect([...started].sort((x, y) => x.queue.localeCompare(y.queue))).toEqual([
      { queue: "sa", replies: [], asked: 0 },
      { queue: "sb", replies: [], asked: 0 },
    ]);
    for (const o of [...a, ...b]) expect(await readFields(redis, keys, o.taskId, ["result"])).toEqual([JSON.stringify(o.taskId)]);
  });

  it("sends a full batch at once and the rest on the next tick", async () => {
    const outcomes = await running("full", 5);
    const { asked, hooks } = recordingHooks();
    const settler = new Settler(store, "w", hooks, 2);
    const results = outcomes.map((o) => settler.settle("full", o));
    // Two full batches went out as they filled; the fifth waits for the tick.
    expect(asked).toEqual(["full", "full"]);
    await Promise.all(results);
    expect(asked).toEqual(["full", "full", "full"]);
  });

  it("claims for the freed slots in the same call, and hands the started tasks on with the count it asked", async () => {
    const outcomes = await running("chain", 1);
    await store.createMany("chain", [newTask("chain/next")]);
    const { started, hooks } = recordingHooks({ count: 3, order: ["normal", "high", "low"] });
    const settler = new Settler(store, "w", hooks);
    await settler.settle("chain", outcomes[0]!);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({ queue: "chain", asked: 3, replies: [{ kind: "run", taskId: "chain/next", attempt: 1 }] });
  });

  it("rejects every caller of a batch Redis refused, and still hands the claim count back", async () => {
    const outcomes = await running("refused", 2);
    const { started, hooks } = recordingHooks({ count: 2, order: ["high", "normal", "low"] });
    const settler = new Settler(store, "w", hooks);
    // A lane key that is not a stream: the settle script fails as a whole.
    await redis.del(keys.lane("refused", "high"));
    await redis.set(keys.lane("refused", "high"), "x");
    const results = await Promise.allSettled(outcomes.map((o) => settler.settle("refused", o)));
    expect(results.map((r) => r.status)).toEqual(["rejected", "rejected"]);
    expect(String((results[0] as PromiseRejectedResult).reason)).toMatch(/WRONGTYPE/);
    expect(settler.settling).toBe(0);
    expect(started).toEqual([{ queue: "refused", replies: [], asked: 2 }]);
  });

  it("works without hooks", async () => {
    const [o] = await running("bare", 1, "FAILED");
    const settler = new Settler(store, "w");
    expect(await settler.settle("bare", { ...o!, error: { message: "x", code: "AGENT_ERROR" } })).toEqual({ ok: true, status: "FAILED", deadLettered: true });
  });

  it("schedules one flush for the outcomes of a tick, however many come in", async () => {
    const outcomes = await running("once", 3);
    const settler = new Settler(store, "w");
    const schedule = vi.spyOn(globalThis, "setImmediate");
    let results: Array<Promise<unknown>>;
    try {
      results = outcomes.map((o) => settler.settle("once", o));
      expect(schedule).toHaveBeenCalledTimes(1);
    } finally {
      schedule.mockRestore();
    }
    expect(await Promise.all(results)).toHaveLength(3);
  });
});
