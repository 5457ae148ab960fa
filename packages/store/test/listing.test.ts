// @cluster: listing across queues (slots), merged
import { createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import type { NewTask } from "../src/task-store.ts";
import { newTask, TestTaskStore } from "../src/testing.ts";

// Listing across queues beyond one page of the indexes: limits, batches, the scan budget, merging.
const redis = testRedis();
const prefix = testPrefix("listing");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const task = (queue: string, name: string, createdAt: number): NewTask => newTask(`${queue}/${name}`, { createdAt });

/** Creates `count` tasks in one queue, one per millisecond from `from` (the index score is the batch's time). */
async function fill(queue: string, count: number, from: number): Promise<string[]> {
  await store.registerQueue(queue);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    await store.createMany(queue, [task(queue, `t${String(i).padStart(4, "0")}`, from + i)]);
    ids.push(`${queue}/t${String(i).padStart(4, "0")}`);
  }
  return ids;
}

async function complete(taskId: string): Promise<void> {
  await store.start(taskId, "w");
  await store.finish(taskId, { attempt: 1, status: "COMPLETED", agent: "a" });
}

describe("listTasks", () => {
  it("pages one queue's index in batches, finding the few tasks a filter keeps far down", async () => {
    const ids = await fill("deep", 260, 1_000_000);
    // Newest first: the completed ones sit at positions 10, 130 and 250 from the top.
    const wanted = [ids[249]!, ids[129]!, ids[9]!];
    for (const id of wanted) await complete(id);
    const page = await store.list({ queue: "deep", status: "COMPLETED", limit: 2 });
    expect(page.tasks.map((t) => t.taskId)).toEqual(wanted.slice(0, 2));
    expect(page.nextCursor).toBeDefined();
    const rest = await store.list({ queue: "deep", status: "COMPLETED", limit: 2, cursor: page.nextCursor });
    expect(rest.tasks.map((t) => t.taskId)).toEqual(wanted.slice(2));
    expect(rest.nextCursor).toBeUndefined();
    // Unfiltered, every task once, in order, across pages of the index reader.
    const all: string[] = [];
    let cursor: string | undefined;
    do {
      const p = await store.list({ queue: "deep", limit: 97, cursor });
      all.push(...p.tasks.map((t) => t.taskId));
      cursor = p.nextCursor;
    } while (cursor);
    expect(all).toEqual([...ids].reverse());
  });

  it("clamps the limit to 1..1000 and takes 50 when unsaid", async () => {
    await fill("many", 1005, 2_000_000);
    expect((await store.list({ queue: "many", limit: 0 })).tasks).toHaveLength(1);
    expect((await store.list({ queue: "many", limit: -5 })).tasks).toHaveLength(1);
    expect((await store.list({ queue: "many" })).tasks).toHaveLength(50);
    const big = await store.list({ queue: "many", limit: 5000 });
    expect(big.tasks).toHaveLength(1000);
    expect(big.nextCursor).toBeDefined();
  });

  it("stops after scanning its budget when a filter keeps nothing, and carries on from there", async () => {
    // 2,500 tasks, none RUNNING: one call scans max(20 × limit, 2000) entries, then hands back a cursor.
    await fill("scan", 2500, 3_000_000);
    const first = await store.list({ queue: "scan", status: "RUNNING", limit: 1 });
    expect(first.tasks).toEqual([]);
    expect(first.nextCursor).toBeDefined();
    const second = await store.list({ queue: "scan", status: "RUNNING", limit: 1, cursor: first.nextCursor });
    expect(second.tasks).toEqual([]);
    expect(second.nextCursor).toBeUndefined();
    // A larger limit has a larger budget: 20 × 150 = 3,000 entries, the whole index in one call.
    expect((await store.list({ queue: "scan", status: "RUNNING", limit: 150 })).nextCursor).toBeUndefined();
  });

  it("merges queues newest first, whichever queue the newest task is in", async () => {
    await store.registerQueue("ma");
    await store.registerQueue("mb");
    const order: Array<[string, number]> = [
      ["mb", 10],
      ["ma", 20],
      ["mb", 30],
      ["ma", 40],
      ["ma", 50],
      ["mb", 60],
    ];
    const p = testPrefix("listing-merge");
    const k = createKeys(p);
    const s = new TestTaskStore(redis, k, DEFAULT_RETENTION);
    for (const [queue, at] of order) {
      await s.registerQueue(queue);
      await s.createMany(queue, [task(queue, `at${at}`, at)]);
    }
    expect((await s.list({ limit: 10 })).tasks.map((t) => t.taskId)).toEqual(["mb/at60", "ma/at50", "ma/at40", "mb/at30", "ma/at20", "mb/at10"]);
    // Equal times: the larger id first, in every queue order.
    await s.createMany("ma", [task("ma", "same", 70)]);
    await s.createMany("mb", [task("mb", "same", 70)]);
    expect((await s.list({ limit: 2 })).tasks.map((t) => t.taskId)).toEqual(["mb/same", "ma/same"]);
    await purgePrefix(redis, p);
  });
});
