// A connection lent by an application still on ioredis 5: another copy of ioredis, so no instance of
// ours. The client and a worker must run on it, and on the duplicates they make of it, as on our own.
// @single: one lent connection's behaviour (skipped on a cluster)
import { collect, echo, onCluster, redisUrl } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { Redis } from "ioredis";
import { Redis as Redis5 } from "ioredis5";
import { afterAll, describe, expect, it } from "vitest";
import { TaskCancelledError } from "../src/index.ts";

describe.skipIf(onCluster())("a connection from ioredis 5", () => {
  const env = useFlotilla("ioredis5");
  const legacy = new Redis5(redisUrl(), { maxRetriesPerRequest: 3 });
  // The blocking and subscriber connections are made with duplicate(): keep them to check their copy.
  const duplicates: unknown[] = [];
  const duplicate = legacy.duplicate.bind(legacy);
  legacy.duplicate = (override) => {
    const made = duplicate(override);
    duplicates.push(made);
    return made;
  };
  afterAll(() => legacy.quit());

  it("runs, streams, cancels and lists tasks on the client it was given and on duplicates of it", async () => {
    const client = env.client({ redis: legacy });
    const worker = await env.worker({ redis: legacy });
    const handle = await client.submit(echo(), "hello from ioredis 5", { detailed: true });
    const events = await collect(handle.stream());
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(await handle.result()).toMatchObject({ text: "Echo: hello from ioredis 5" });

    const waiting = await client.submit(echo(), "never run", { queue: "nobody" });
    expect(await waiting.cancel("not needed")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    await expect(waiting.result()).rejects.toBeInstanceOf(TaskCancelledError);

    const page = await client.listTasks({ queue: "default" });
    expect(page.tasks.map((t) => t.taskId)).toEqual([handle.taskId]);
    const fleet = await client.getFleetStatus();
    expect(fleet.workers.map((w) => w.workerId)).toContain(worker.workerId);

    // The worker's blocking and subscriber connections and the client's subscriber: all ioredis 5.
    expect(duplicates).toHaveLength(3);
    for (const made of duplicates) {
      expect(made).toBeInstanceOf(Redis5);
      expect(made).not.toBeInstanceOf(Redis);
    }
  });
});
