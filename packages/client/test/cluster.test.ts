// A worker and a client on a Redis Cluster this file starts (whichever Redis the rest of the suite
// runs on): one worker serving two queues that live on different slots runs tasks of both, streams
// their events live, and stops a running task on cancel — every message on sharded Pub/Sub.
import { createKeys, ErrorCodes } from "@flotilla/core";
import { keySlot } from "@flotilla/core/redis";
import type { FlotillaEvent } from "@flotilla/events";
import { collect, echo, scripted, startRedisCluster, type TestRedisCluster, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient } from "../src/index.ts";

let cluster: TestRedisCluster;
let worker: Worker;
let client: FlotillaClient;
const prefix = testPrefix("worker-cluster");
const queues = ["cl-a", "cl-b"];
/** What the worker reported going wrong (a read refused CROSSSLOT would be one). */
const errors: unknown[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
  const redis = { cluster: [cluster.nodes[0]!] };
  worker = new Worker({ redis, prefix, queues, blockMs: 500, heartbeatTtlMs: 3000 });
  worker.on("worker:error", (err) => errors.push(err));
  await worker.start();
  client = new FlotillaClient({ redis, prefix });
}, 60_000);
afterAll(async () => {
  await client?.close();
  await worker?.stop({ drainTimeoutMs: 500 });
  await cluster?.stop();
});

describe("on a Redis Cluster", () => {
  it("one worker runs the tasks of queues on different slots, and their events stream live", async () => {
    const keys = createKeys(prefix);
    expect(keySlot(keys.queue("cl-a"))).not.toBe(keySlot(keys.queue("cl-b")));
    // Submitted while the worker idles: it waits on each slot's queues in turn.
    for (const queue of queues) {
      const handle = await client.submit(echo(), `hello ${queue}`, { queue, detailed: true });
      const events: FlotillaEvent[] = await collect(handle.stream());
      expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
      expect(
        events
          .filter((e) => e.type === "text")
          .map((e) => (e as { delta: string }).delta)
          .join(""),
      ).toBe(`Echo: hello ${queue}`);
      expect((await handle.result()).text).toBe(`Echo: hello ${queue}`);
    }
    // Each blocking read named one slot's queues: none was refused.
    expect(errors).toEqual([]);
  });

  it("stops a running task on cancel: the request reaches its worker on its queue's cancel channel", async () => {
    const handle = await client.submit(scripted("slow", { reply: "a b c d e f g h i j", tokenDelayMs: 300 }), "x", { queue: "cl-b" });
    await waitFor(async () => (await handle.status()).status === "RUNNING", { what: "the task to run" });
    expect(await handle.cancel("enough")).toMatchObject({ outcome: "requested" });
    await expect(handle.result()).rejects.toMatchObject({ code: ErrorCodes.TASK_CANCELLED });
    expect((await handle.status()).status).toBe("CANCELLED");
  });
});
