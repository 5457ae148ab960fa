import { ErrorCodes, ValidationError } from "@flotilla/core";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

// client.deadLetters on letters written the way a worker writes them (the store's settle script).
describe("client.deadLetters", () => {
  const h = useFlotilla("dead-letters");

  /** A task that failed for good on `queue`: its record FAILED, its entry dead-lettered. */
  async function failed(queue: string, name: string): Promise<string> {
    const taskId = `${queue}/${name}`;
    await h.broker.ensureGroup(queue);
    await h.store.create({
      taskId,
      queue,
      agent: "a",
      payload: '{"agent":{"name":"a","model":"scripted:x"},"input":"x"}',
      createdAt: Date.now(),
      detailed: false,
      maxRetries: 0,
      metadata: {},
    });
    const [run] = await h.store.claim(queue, "w", 1);
    if (run?.kind !== "run") throw new Error("not started");
    await h.store.settle(queue, "w", [
      {
        taskId,
        priority: run.priority,
        entryId: run.entryId,
        attempt: 1,
        agent: "a",
        status: "FAILED",
        error: { message: "no", code: "AGENT_ERROR" },
        deadReason: "failed: no",
      },
    ]);
    return taskId;
  }

  it("lists a queue's letters oldest first, pages on after an id, and gets one by id", async () => {
    const client = h.client();
    const a = await failed("dl1", "a");
    const b = await failed("dl1", "b");
    const letters = await client.deadLetters.list("dl1");
    expect(letters.map((l) => [l.taskId, l.reason])).toEqual([
      [a, "failed: no"],
      [b, "failed: no"],
    ]);
    expect((await client.deadLetters.list("dl1", { count: 1 })).map((l) => l.taskId)).toEqual([a]);
    expect((await client.deadLetters.list("dl1", { after: letters[0]!.id })).map((l) => l.taskId)).toEqual([b]);
    expect(await client.deadLetters.get("dl1", letters[1]!.id)).toEqual(letters[1]);
    expect(await client.deadLetters.get("dl1", "0-1")).toBeUndefined();
    expect(await client.deadLetters.list()).toEqual([]); // the default queue has none
  });

  it("re-queues a failed task: PENDING again, the letter gone, a handle on the task", async () => {
    const client = h.client();
    const taskId = await failed("dl2", "t");
    const [letter] = await client.deadLetters.list("dl2");
    const handle = await client.deadLetters.requeue("dl2", letter!.id);
    expect(handle.taskId).toBe(taskId);
    expect((await handle.status()).status).toBe("PENDING");
    expect(await client.deadLetters.list("dl2")).toEqual([]);
    await expect(client.deadLetters.requeue("dl2", letter!.id)).rejects.toMatchObject({ code: ErrorCodes.DEAD_LETTER_NOT_FOUND });
  });

  it("refuses to re-queue a letter with no task, and a task that is no longer FAILED, keeping the letter", async () => {
    const client = h.client();
    const junk = (await h.redis.xadd(h.keys.deadLetters("dl3"), "*", "entryId", "1-1", "reason", "malformed", "fields", "{}", "at", "1")) as string;
    const noTask = await client.deadLetters.requeue("dl3", junk).catch((err: unknown) => err);
    expect(noTask).toBeInstanceOf(ValidationError);
    expect(noTask).toMatchObject({ field: "deadLetterId", message: expect.stringContaining(`${junk} is a malformed entry with no task to re-queue`) });

    const taskId = await failed("dl3", "done");
    await h.redis.hset(h.keys.task(taskId), "status", "COMPLETED");
    const [, letter] = await client.deadLetters.list("dl3");
    const refused = await client.deadLetters.requeue("dl3", letter!.id).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ValidationError);
    expect(refused).toMatchObject({ message: expect.stringContaining(`task ${taskId} is COMPLETED; only FAILED tasks can be re-queued`) });
    await h.redis.del(h.keys.task(taskId));
    const gone = await client.deadLetters.requeue("dl3", letter!.id).catch((err: unknown) => err);
    expect(gone).toMatchObject({ message: expect.stringContaining(`task ${taskId} is gone`) });
    expect(await client.deadLetters.list("dl3")).toHaveLength(2);
  });

  it("refuses a queue name that is not one", async () => {
    const client = h.client();
    for (const call of [() => client.deadLetters.list("no spaces"), () => client.deadLetters.get("a{b}", "0-1"), () => client.deadLetters.requeue("", "0-1")]) {
      await expect(call()).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, field: "queue" });
    }
  });
});
