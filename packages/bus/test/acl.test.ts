// The bus as the least-privilege users of tooling/redis/users.acl run it: a worker serving
// subscriptions as flotilla-worker, publishing, requests, stats and dead letters as
// flotilla-client, readers as flotilla-readonly. Whatever Redis refused is in its ACL LOG.
import { copyFileSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { UnrecoverableError } from "@flotilla/core";
import { aclRefusals, startRedisServer, type TestRedisServer, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, busWorker, subscribe } from "../src/index.ts";

const ACL_FILE = fileURLToPath(new URL("../../../tooling/redis/users.acl", import.meta.url));
const PASSWORD = "bus-acl-test";
let server: TestRedisServer;
let admin: Redis;
const url = (user: string) => `redis://${user}:${PASSWORD}@127.0.0.1:${server.port}`;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), "flotilla-bus-acl-"));
  copyFileSync(ACL_FILE, join(dir, "users.acl"));
  server = await startRedisServer({ aof: false, args: ["--aclfile", join(dir, "users.acl")] });
  admin = new Redis(server.url);
  for (const user of ["flotilla-worker", "flotilla-client", "flotilla-readonly"]) await admin.call("ACL", "SETUSER", user, "on", `>${PASSWORD}`);
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

const refused = () => aclRefusals(admin);

describe("the bus as the ACL users", () => {
  it("serve, publish, request, replyTo, retries, dead letters, stats, deleting a subscription: nothing refused", async () => {
    const prefix = testPrefix("bus-acl").replace(/^[^:]+/, "flotilla");
    const errors: unknown[] = [];
    const worker = new Worker({
      redis: url("flotilla-worker"),
      prefix,
      blockMs: 300,
      heartbeatTtlMs: 3000,
      bus: busWorker({
        maxLen: 50,
        subscriptions: [
          subscribe(
            "acl.jobs",
            (event) => {
              const n = (event.payload as { n: number }).n;
              if (n < 0) throw new UnrecoverableError("negative");
              return { n };
            },
            { name: "acl", from: "start", reclaimAfterMs: 600, backoff: { delayMs: 20, maxDelayMs: 20, jitter: 0 } },
          ),
        ],
      }),
    });
    worker.on("worker:error", (err) => errors.push(err));
    const bus = new Bus({ redis: url("flotilla-client"), prefix, maxLen: 50 });
    const reader = new Bus({ redis: url("flotilla-readonly"), prefix });
    try {
      await worker.start();
      expect((await bus.request("acl.jobs", { n: 1 }, { timeoutMs: 10_000 })).payload).toEqual({ n: 1 });
      await bus.publishMany(
        Array.from({ length: 120 }, (_, n) => ({ topic: "acl.jobs", payload: { n }, options: { replyTo: "acl.replies", idempotencyKey: `k${n}` } })),
      );
      await bus.publish("acl.jobs", { n: -1 });
      await waitFor(async () => (await bus.deadLetters.list("acl.jobs", "acl")).length === 1, { timeoutMs: 10_000 });
      await waitFor(async () => (await reader.groups("acl.jobs"))[0]?.counts.acked === 121, { timeoutMs: 10_000 });
      expect((await reader.inspect("acl.replies", { limit: 1 })).length).toBe(1);
      expect(await reader.deadLetters.list("acl.jobs", "acl")).toHaveLength(1);
      expect(Object.keys(await bus.deadLetters.republish("acl.jobs", "acl"))).toHaveLength(1);
      await waitFor(async () => (await bus.deadLetters.list("acl.jobs", "acl")).length === 1, { timeoutMs: 10_000 });
      expect(await bus.deadLetters.purge("acl.jobs", "acl")).toBe(1);
      expect(await reader.topics()).toEqual(["acl.jobs", "acl.replies"]);
    } finally {
      await worker.stop({ drainTimeoutMs: 1000 });
      expect(await bus.deleteSubscription("acl.jobs", "acl")).toBe(true);
      await bus.close();
      await reader.close();
    }
    expect(await refused()).toEqual([]);
    expect(errors).toEqual([]);
  }, 60_000);
});
