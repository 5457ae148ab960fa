// The store's scripts when Redis lost a queue's lanes and consumer groups (restarted without
// persistence, failed over to an empty replica): a create makes them again and says so; a claim
// that can read nothing fails with NOGROUP having written nothing; a claim or settle that can read
// some lanes starts what it read and leaves the rest alone.
import { Broker, laneKeys } from "@flotilla/broker";
import { CONSUMER_GROUP, createKeys, DEFAULT_RETENTION, PRIORITIES } from "@flotilla/core";
import { keysUnder, purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

const redis = testRedis();
const prefix = testPrefix("lost-groups");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new Broker(redis, keys);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

let n = 0;
const task = (queue: string, over: Partial<NewTask> = {}): NewTask => newTask(`${queue}/t${++n}`, over);

/** The groups each lane of `queue` has, high → low ([] for a lane that does not exist). */
async function groupsOf(queue: string): Promise<string[][]> {
  return Promise.all(
    laneKeys(keys, queue).map(async (lane) => {
      if (!(await redis.exists(lane))) return [];
      const groups = (await redis.xinfo("GROUPS", lane)) as unknown[][];
      return groups.map((g) => String(g[1]));
    }),
  );
}

/** What Redis keeps of a queue after it lost its data, for the lanes only: nothing. */
const loseLanes = (queue: string) => redis.del(...laneKeys(keys, queue));

describe("the store's scripts after Redis lost a queue's consumer groups", () => {
  it("a create makes the lanes again with their group, says so once, and costs nothing more when they exist", async () => {
    await broker.ensureGroup("c");
    expect((await store.createMany("c", [task("c")])).lanesMade).toBe(false);
    await loseLanes("c");
    const { created, lanesMade } = await store.createMany("c", [task("c", { priority: "low" }), task("c")]);
    expect({ created, lanesMade }).toEqual({ created: [true, true], lanesMade: true });
    expect(await groupsOf("c")).toEqual([[CONSUMER_GROUP], [CONSUMER_GROUP], [CONSUMER_GROUP]]);
    expect((await store.createMany("c", [task("c")])).lanesMade).toBe(false);
    // The entries written are read by the group: none of them is skipped.
    expect((await store.claim("c", "w", 10)).map((r) => r.kind)).toEqual(["run", "run", "run"]);
  });

  it("a claim that can read no lane fails with NOGROUP and writes nothing; once the groups are made again it claims", async () => {
    const t = task("n");
    await broker.ensureGroup("n");
    await store.createMany("n", [t]);
    await loseLanes("n");
    // An entry added without the create script (an older producer): the lane exists, its group does not.
    await redis.xadd(keys.lane("n", "normal"), "*", "task", t.taskId.slice(2));
    const before = await keysUnder(redis, prefix);
    await expect(store.claim("n", "w", 5)).rejects.toThrow(/^NOGROUP .*'flotilla'/);
    expect(await keysUnder(redis, prefix)).toEqual(before); // no claim marker, no statistics
    expect((await store.get(t.taskId))?.status).toBe("PENDING");

    await broker.ensureGroup("n", { again: true });
    expect(await groupsOf("n")).toEqual([[CONSUMER_GROUP], [CONSUMER_GROUP], [CONSUMER_GROUP]]);
    expect(await store.claim("n", "w", 5)).toMatchObject([{ kind: "run", taskId: t.taskId, attempt: 1 }]);
  });

  it("a claim that can read some lanes starts what it read there and leaves the lane without a group as it was", async () => {
    const high = task("p", { priority: "high" });
    const normal = task("p");
    await broker.ensureGroup("p");
    await store.createMany("p", [high, normal]);
    await redis.xgroup("DESTROY", keys.lane("p", "normal"), CONSUMER_GROUP);
    expect(await store.claim("p", "w", 5, ["normal", "high", "low"])).toMatchObject([{ kind: "run", taskId: high.taskId }]);
    expect((await store.get(normal.taskId))?.status).toBe("PENDING");
    await broker.ensureGroup("p", { again: true });
    expect(await store.claim("p", "w", 5)).toMatchObject([{ kind: "run", taskId: normal.taskId }]);
  });

  it("a settle whose lanes lost their group records its outcomes, and its claim finds nothing instead of failing", async () => {
    const t = task("s");
    await broker.ensureGroup("s");
    await store.createMany("s", [t]);
    const [run] = await store.claim("s", "w", 1);
    if (run?.kind !== "run") throw new Error("no run");
    await loseLanes("s");
    const reply = await store.settle(
      "s",
      "w",
      [{ taskId: t.taskId, priority: "normal", entryId: run.entryId, attempt: 1, agent: "a", status: "COMPLETED", result: "done" }],
      { claim: 3 },
    );
    expect(reply).toEqual({ outcomes: [{ ok: true, status: "COMPLETED", deadLettered: false }], started: [] });
    expect(await store.get(t.taskId)).toMatchObject({ status: "COMPLETED", result: "done" });
    // A retry of a task whose entry went with the group is not moved to the delayed set: no one holds it.
    const retried = task("s");
    await store.createMany("s", [retried]);
    const [again] = await store.claim("s", "w", 1);
    if (again?.kind !== "run") throw new Error("no run");
    await loseLanes("s");
    const { outcomes } = await store.settle("s", "w", [
      { taskId: retried.taskId, priority: "normal", entryId: again.entryId, attempt: 1, agent: "a", status: "RETRYING", retryAt: Date.now() },
    ]);
    expect(outcomes).toEqual([{ ok: true, status: "RETRYING", deadLettered: false }]);
    expect(await redis.exists(...PRIORITIES.map((p) => keys.delayed("s", p)))).toBe(0);
  });

  it("a dead letter re-queued into a lane that is gone makes the lane again with its group", async () => {
    const t = task("r");
    await broker.ensureGroup("r");
    await store.createMany("r", [t]);
    const [run] = await store.claim("r", "w", 1);
    if (run?.kind !== "run") throw new Error("no run");
    await store.settle("r", "w", [
      {
        taskId: t.taskId,
        priority: "normal",
        entryId: run.entryId,
        attempt: 1,
        agent: "a",
        status: "FAILED",
        error: { message: "x", code: "AGENT_ERROR" },
        deadReason: "failed",
      },
    ]);
    const [letter] = await broker.listDeadLetters("r");
    await loseLanes("r");
    expect((await store.requeueDeadLetter({ queue: "r", priority: "normal", id: letter!.id, taskId: t.taskId })).outcome).toBe("ok");
    expect((await groupsOf("r"))[1]).toEqual([CONSUMER_GROUP]);
    expect(await store.claim("r", "w", 1)).toMatchObject([{ kind: "run", taskId: t.taskId }]);
  });
});
