// The least-privilege ACL users of tooling/redis/users.acl, loaded into a redis-server this file
// starts (`--aclfile`), run the suite's main paths: a worker as flotilla-worker and a client as
// flotilla-client run tasks end to end with nothing refused (Redis's ACL LOG stays empty);
// flotilla-readonly reads but cannot submit or cancel; no user reaches a key or channel outside the
// prefix, nor KEYS, FLUSH*, CONFIG or DEBUG; every command a Lua script runs is granted to who runs it.
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCodes } from "@flotilla/core";
import { defineNode, graphWorker } from "@flotilla/graph";
import { aclRefusals, collect, echo, scripted, startRedisServer, type TestRedisServer, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient, type FlotillaEvent } from "../src/index.ts";
import { ACL_FILE, aclUsers, luaScripts, scopedAcl } from "./fixtures/acl.ts";

const PASSWORD = "acl-test-password";
/** Under `flotilla:`, the prefix the shipped users are scoped to. */
const prefix = `flotilla:${testPrefix("acl")}`;
const queue = "acl";
const USERS = ["flotilla-worker", "flotilla-client", "flotilla-readonly"] as const;
type User = (typeof USERS)[number];

let server: TestRedisServer;
/** The default user: the operator's own connection. */
let admin: Redis;
let dir: string;
const url = (user: User) => `redis://${user}:${PASSWORD}@127.0.0.1:${server.port}`;

/** A plain connection as `user`, for commands of the test's own. */
function connect(user: User): Redis {
  const r = new Redis(url(user), { maxRetriesPerRequest: 1, lazyConnect: true });
  r.on("error", () => {});
  return r;
}

/** What Redis refused whom since the last reset: (user, command or key or channel, reason). */
const refused = () => aclRefusals(admin);

/** The `commands` rule of a user as the server holds it (ACL GETUSER). */
/**
 * The commands a user may run (upper case, `XGROUP|CREATE` for a subcommand), from its rules as the
 * server holds them after parsing the file: Redis may write a run of commands as a category with
 * exceptions (`-@all +@stream -xautoclaim …`), so categories are expanded, in order.
 */
async function grantedCommands(user: User): Promise<Set<string>> {
  const reply = (await admin.call("ACL", "GETUSER", user)) as unknown[];
  const granted = new Set<string>();
  for (const rule of String(reply[reply.indexOf("commands") + 1]).split(" ")) {
    const add = rule.startsWith("+");
    const name = rule.slice(1);
    const names = name.startsWith("@")
      ? name === "@all"
        ? [...granted]
        : ((await admin.call("COMMAND", "LIST", "FILTERBY", "ACLCAT", name.slice(1))) as string[])
      : [name];
    for (const n of names) {
      if (add) granted.add(n.toUpperCase());
      else granted.delete(n.toUpperCase());
    }
  }
  return granted;
}

beforeAll(async () => {
  // A copy: the server may write its ACL file (ACL SAVE), never the repository's.
  dir = mkdtempSync(join(tmpdir(), "flotilla-acl-"));
  const aclFile = join(dir, "users.acl");
  copyFileSync(ACL_FILE, aclFile);
  // DEBUG enabled (for local connections): refused by the ACL, not merely by the server's default.
  server = await startRedisServer({ aof: false, args: ["--aclfile", aclFile, "--enable-debug-command", "local"] });
  admin = new Redis(server.url);
  // The shipped users are off and have no password: an operator turns them on with one.
  for (const user of USERS) await admin.call("ACL", "SETUSER", user, "on", `>${PASSWORD}`);
});
afterAll(async () => {
  await admin?.quit();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe("the ACL users of tooling/redis/users.acl", () => {
  it("are all off and without a password as shipped, and none is granted KEYS, FLUSH*, CONFIG, DEBUG or all commands", () => {
    const users = aclUsers(readFileSync(ACL_FILE, "utf8"));
    expect(users.map((u) => u.name).sort()).toEqual([...USERS].sort());
    for (const { name, rules } of users) {
      expect(rules.slice(0, 5), name).toEqual(["off", "resetpass", "resetkeys", "resetchannels", "-@all"]);
      expect(
        rules.filter((r) => /^\+(@|keys|flush|config|debug|acl|scan|shutdown|script|module|monitor|replicaof|slaveof)/i.test(r)),
        name,
      ).toEqual([]);
      expect(
        rules.filter((r) => /^%?[RW]*~/.test(r) || r.startsWith("&")).every((r) => r.includes("flotilla:")),
        name,
      ).toBe(true);
    }
  });

  it("grant every command each Lua script runs to the users that run it (Redis checks a script's commands against its caller)", async () => {
    /**
     * Who runs each script; a script not named here must be runnable by both the worker and the
     * client (store/create among them: a graph run's worker creates the next nodes' tasks).
     */
    const clientOnly = new Set([
      "store/requeue",
      "cancel/cancel",
      "bus/republish",
      "bus/deleteGroup",
      "schedules/upsertSchedule",
      "schedules/pauseSchedule",
      "schedules/resumeSchedule",
      "schedules/deleteSchedule",
    ]);
    const workerOnly = new Set([
      "store/claim",
      "store/start",
      "store/settle",
      "store/publish",
      "store/failCorrupt",
      "broker/deadLetter",
      "broker/promote",
      "broker/pruneConsumers",
      "broker/reclaim",
      "broker/renew",
      "health/beat",
      "bus/ack",
      "bus/fail",
      "bus/renew",
      "bus/reclaim",
      "bus/trim",
      "bus/pruneConsumers",
      "ratelimit/acquire",
      "ratelimit/account",
      "ratelimit/pause",
      "schedules/takeDue",
      "schedules/advanceSchedule",
      "schedules/forgetOrphan",
    ]);
    const scripts = luaScripts();
    expect(scripts.map((s) => s.id)).toEqual(expect.arrayContaining([...clientOnly, ...workerOnly]));
    const missing: string[] = [];
    for (const { id, commands } of scripts) {
      const users: User[] = clientOnly.has(id) ? ["flotilla-client"] : workerOnly.has(id) ? ["flotilla-worker"] : ["flotilla-worker", "flotilla-client"];
      for (const user of users) {
        // The user's commands as the server holds them, after it parsed the file: "-@all +get +xgroup|create …".
        const granted = await grantedCommands(user);
        for (const command of ["EVALSHA", "EVAL", ...commands]) {
          if (!granted.has(command) && !granted.has(command.split("|")[0]!)) missing.push(`${user} may not run ${command}, which ${id} runs`);
        }
      }
    }
    expect(missing).toEqual([]);
  });
});

describe("flotilla-worker and flotilla-client run the main paths", () => {
  it("submit, stream, results, idempotency, batches, delays, memory, cancel, dead letters, fleet status: nothing refused", async () => {
    await admin.call("ACL", "LOG", "RESET");
    const errors: unknown[] = [];
    const worker = new Worker({ redis: url("flotilla-worker"), prefix, queues: [queue], concurrency: 4, blockMs: 500, heartbeatTtlMs: 3000 });
    worker.on("worker:error", (err) => errors.push(err));
    const client = new FlotillaClient({ redis: url("flotilla-client"), prefix });
    try {
      await worker.start();
      const handle = await client.submit(echo(), "as a least-privilege user", { queue, detailed: true, idempotencyKey: "acl-once" });
      const events: FlotillaEvent[] = await collect(handle.stream());
      expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
      expect(await handle.result()).toMatchObject({ text: "Echo: as a least-privilege user" });
      expect((await client.submit(echo(), "again", { queue, idempotencyKey: "acl-once" })).taskId).toBe(handle.taskId);

      const batch = await client.submitMany([1, 2, 3].map((i) => ({ agent: echo(), input: `batch ${i}`, options: { queue } })));
      const delayed = await client.submit(echo(), "later", { queue, delayMs: 300 });
      for (const h of [...batch, delayed]) expect(await h.result()).toMatchObject({ text: expect.stringMatching(/^Echo: /) });

      const conversationId = "acl-conversation";
      await (await client.submit(echo(), "remember me", { queue, metadata: { memory: { conversationId } } })).result();
      expect((await client.conversations.get(conversationId).messages()).length).toBeGreaterThan(0);
      await client.conversations.get(conversationId).clear();

      const slow = await client.submit(scripted("slow", { reply: "a b c d e f g h", tokenDelayMs: 300 }), "x", { queue });
      await waitFor(async () => (await slow.status()).status === "RUNNING", { what: "the slow task to run" });
      expect(await slow.cancel("enough")).toMatchObject({ outcome: "requested" });
      await expect(slow.result()).rejects.toMatchObject({ code: ErrorCodes.TASK_CANCELLED });

      const failing = await client.submit(scripted("failing", { failWith: "no luck" }), "x", { queue, maxRetries: 0 });
      await expect(failing.result()).rejects.toMatchObject({ code: ErrorCodes.TASK_FAILED });
      const [dead] = await client.deadLetters.list(queue);
      expect(dead).toMatchObject({ taskId: failing.taskId });
      expect(await client.deadLetters.get(queue, dead!.id)).toMatchObject({ taskId: failing.taskId });
      const requeued = await client.deadLetters.requeue(queue, dead!.id);
      await expect(requeued.result()).rejects.toMatchObject({ code: ErrorCodes.TASK_FAILED });

      const fleet = await client.fleet.status();
      expect(fleet.workers.map((w) => w.workerId)).toEqual([worker.workerId]);
      expect(await client.fleet.queueDepth(queue)).toMatchObject({ waiting: 0, inFlight: 0, delayed: 0 });
      expect((await client.listTasks({ queue })).tasks.map((t) => t.taskId)).toContain(handle.taskId);

      // A graph run: its worker's hand-offs and sweeper, the client's start, stream, listing and templates.
      const graphWorkerProcess = new Worker({
        redis: url("flotilla-worker"),
        prefix,
        blockMs: 500,
        heartbeatTtlMs: 3000,
        graph: graphWorker({
          nodes: [defineNode({ type: "acl-fan", execute: () => [1, 2] }), defineNode({ type: "acl-sum", execute: (xs: number[]) => xs.length })],
          sweepIntervalMs: 100,
        }),
      });
      graphWorkerProcess.on("worker:error", (err) => errors.push(err));
      await graphWorkerProcess.start();
      try {
        const graph = {
          name: "acl-graph",
          nodes: [
            { id: "fan", type: "acl-fan", fanOut: true, next: ["sum"] },
            { id: "sum", type: "acl-sum", unites: { id: "fan" }, inputs: "${{fan.outputs}}" },
          ],
        };
        await client.graphs.templates.save(graph);
        const run = await client.startGraph("acl-graph", null, { idempotencyKey: "acl-run" });
        const seen = [];
        for await (const e of run.stream({ timeoutMs: 10_000 })) seen.push(e.type);
        expect(seen.at(-1)).toBe("run-finished");
        expect(await run.result()).toEqual({ sum: 2 });
        expect((await client.listRuns({ graph: "acl-graph" })).runs.map((r) => r.runId)).toEqual([run.runId]);
      } finally {
        await graphWorkerProcess.stop({ drainTimeoutMs: 1000 });
      }
    } finally {
      await client.close();
      await worker.stop({ drainTimeoutMs: 1000 });
    }
    // Whatever was refused would be here, even where the code only logs it (a heartbeat, a gauge).
    expect(await refused()).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("run the alert rules as the gateway does (client.fleet.runAlerts): the lease, the figures, the alert stream", async () => {
    await admin.call("ACL", "LOG", "RESET");
    const client = new FlotillaClient({ redis: url("flotilla-client"), prefix: `${prefix}-alerts` });
    const failures: unknown[] = [];
    const manager = client.fleet.runAlerts({ intervalMs: 100, thresholds: { noWorkerForMs: 0 }, onError: (err) => failures.push(err) });
    try {
      // No worker on this prefix: no_worker_alive fires, and is kept in the alert stream.
      await waitFor(async () => (await client.fleet.alerts()).firing.some((e) => e.rule === "no_worker_alive"));
      expect(manager.leader).toBe(true);
    } finally {
      await manager.stop();
      await client.close();
    }
    expect(failures).toEqual([]);
    expect(await refused()).toEqual([]);
  });
});

describe("flotilla-readonly", () => {
  const ids: { completed: string; failed: string; pending: string; expired: string } = { completed: "", failed: "", pending: "", expired: "" };
  let reader: FlotillaClient;
  let worker: Worker;
  beforeAll(async () => {
    worker = new Worker({ redis: url("flotilla-worker"), prefix, queues: ["ro"], blockMs: 500, heartbeatTtlMs: 3000 });
    const writer = new FlotillaClient({ redis: url("flotilla-client"), prefix });
    await worker.start();
    const completed = await writer.submit(echo(), "read me", { queue: "ro", detailed: true });
    await completed.result();
    const failed = await writer.submit(scripted("failing", { failWith: "no luck" }), "x", { queue: "ro" });
    await failed.result().catch(() => {});
    const expired = await writer.submit(echo(), "expire me", { queue: "ro" });
    await expired.result();
    // No worker serves this queue: it stays PENDING.
    const pending = await writer.submit(echo(), "wait", { queue: "ro-idle" });
    await writer.close();
    Object.assign(ids, { completed: completed.taskId, failed: failed.taskId, pending: pending.taskId, expired: expired.taskId });
    reader = new FlotillaClient({ redis: url("flotilla-readonly"), prefix });
  }, 60_000);
  afterAll(async () => {
    await reader?.close();
    await worker?.stop({ drainTimeoutMs: 500 });
  });

  it("reads task status, results, event streams, task lists, the fleet and dead letters", async () => {
    await admin.call("ACL", "LOG", "RESET");
    const completed = reader.handle(ids.completed);
    expect(await completed.status()).toMatchObject({ status: "COMPLETED" });
    expect(await completed.result()).toMatchObject({ text: "Echo: read me" });
    expect((await collect(completed.stream())).at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect((await reader.handle(ids.pending).status()).status).toBe("PENDING");
    // A listed record that expired is dropped from its queue's index as the listing meets it: the one
    // write this user may make (ZREM on task indexes only).
    const [expiredQueue, expiredName] = ids.expired.split("/");
    await admin.del(`${prefix}:task:{${expiredQueue}}:${expiredName}`);
    const listed = (await reader.listTasks()).tasks.map((t) => t.taskId);
    expect(listed).toEqual(expect.arrayContaining([ids.completed, ids.failed, ids.pending]));
    expect(listed).not.toContain(ids.expired);
    expect(await admin.zscore(`${prefix}:queue:{ro}:tasks`, expiredName!)).toBeNull();
    expect((await reader.fleet.status()).workers.map((w) => w.workerId)).toEqual([worker.workerId]);
    expect(await reader.fleet.queueDepth("ro-idle")).toMatchObject({ waiting: 1 });
    const [dead] = await reader.deadLetters.list("ro");
    expect(dead).toMatchObject({ taskId: ids.failed });
    expect(await reader.deadLetters.get("ro", dead!.id)).toMatchObject({ taskId: ids.failed });
    expect(await refused()).toEqual([]);
  });

  it("follows the fleet live (client.watch): tasks, workers and runs read with its grants alone", async () => {
    await admin.call("ACL", "LOG", "RESET");
    const errors: unknown[] = [];
    const watch = reader.watch({ pollMs: 100, onError: (err) => errors.push(err) });
    await watch.ready;
    const seen: string[] = [];
    const reading = (async () => {
      for await (const e of watch) seen.push(`${e.type}${"taskId" in e ? ` ${e.taskId}` : ""}`);
    })();
    const writer = new FlotillaClient({ redis: url("flotilla-client"), prefix });
    const handle = await writer.submit(echo(), "watched", { queue: "ro" });
    await handle.result();
    await writer.close();
    await waitFor(() => seen.includes(`task.submitted ${handle.taskId}`) && seen.includes(`task.finished ${handle.taskId}`));
    await watch.close();
    await reading;
    expect(errors).toEqual([]);
    expect(await refused()).toEqual([]);
  });

  it("cannot submit, cancel, re-queue or forget a conversation: NOPERM, and nothing changes", async () => {
    await expect(reader.submit(echo(), "x", { queue: "ro-idle" })).rejects.toThrow(/NOPERM/);
    await expect(reader.submit(echo(), "x", { queue: "ro" })).rejects.toThrow(/NOPERM/);
    await expect(reader.handle(ids.pending).cancel("no")).rejects.toThrow(/NOPERM/);
    const [dead] = await reader.deadLetters.list("ro");
    await expect(reader.deadLetters.requeue("ro", dead!.id)).rejects.toThrow(/NOPERM/);
    await expect(reader.conversations.get("any").clear()).rejects.toThrow(/NOPERM/);
    expect((await reader.handle(ids.pending).status()).status).toBe("PENDING");
    expect(await reader.fleet.queueDepth("ro-idle")).toMatchObject({ waiting: 1 });
  });
});

describe("outside the prefix", () => {
  it.each(USERS)("%s reaches no key or channel outside the prefix, and no KEYS, FLUSH*, CONFIG or DEBUG", async (user) => {
    const r = connect(user);
    try {
      // The same command on a key of the prefix is allowed: the refusals below are about the key.
      expect(await r.hget(`${prefix}:probe`, "f")).toBeNull();
      await expect(r.hget("other:x", "f")).rejects.toThrow(/NOPERM/);
      await expect(r.xlen("other:x")).rejects.toThrow(/NOPERM/);
      if (user !== "flotilla-readonly") {
        await expect(r.set("other:x", "1")).rejects.toThrow(/NOPERM/);
        // A script is no way around it: Redis checks each command a script runs against its caller.
        await expect(r.eval("return redis.call('GET', KEYS[1])", 1, "other:x")).rejects.toThrow(/NOPERM/);
        await expect(r.eval("return redis.call('GET', 'other:x')", 1, `${prefix}:probe`)).rejects.toThrow(/user executing the script can't access/);
        await expect(r.call("SPUBLISH", "other:channel", "m")).rejects.toThrow(/NOPERM/);
      }
      await expect(r.call("SSUBSCRIBE", "other:channel")).rejects.toThrow(/NOPERM/);
      for (const command of [
        ["KEYS", "*"],
        ["FLUSHALL"],
        ["FLUSHDB"],
        ["CONFIG", "GET", "maxmemory"],
        ["DEBUG", "SLEEP", "0"],
        ["SCAN", "0"],
        ["ACL", "LIST"],
      ]) {
        await expect(r.call(command[0]!, ...command.slice(1)), command.join(" ")).rejects.toThrow(/NOPERM/);
      }
    } finally {
      r.disconnect();
    }
  });
});

describe("users scoped to a tenant's prefix (the shipped users with the prefix replaced)", () => {
  const tenants = { a: testPrefix("tenant-a"), b: testPrefix("tenant-b") };
  const tenantUrl = (user: string) => `redis://${user}:${PASSWORD}@127.0.0.1:${server.port}`;
  beforeAll(async () => {
    const text = readFileSync(ACL_FILE, "utf8");
    for (const [tenant, tenantPrefix] of Object.entries(tenants)) {
      for (const { name, rules } of aclUsers(scopedAcl(text, tenantPrefix, `tenant-${tenant}`))) {
        await admin.call("ACL", "SETUSER", name, ...rules, "on", `>${PASSWORD}`);
      }
    }
  });

  it("run a tenant's tasks on its prefix, and cannot read or listen to another tenant's keys and channels", async () => {
    const worker = new Worker({ redis: tenantUrl("tenant-a-worker"), prefix: tenants.a, queues: ["t"], blockMs: 500, heartbeatTtlMs: 3000 });
    const client = new FlotillaClient({ redis: tenantUrl("tenant-a-client"), prefix: tenants.a });
    const intruder = new FlotillaClient({ redis: tenantUrl("tenant-a-client"), prefix: tenants.b });
    const b = new FlotillaClient({ redis: tenantUrl("tenant-b-client"), prefix: tenants.b });
    try {
      await worker.start();
      expect(await (await client.submit(echo(), "tenant a", { queue: "t" })).result()).toMatchObject({ text: "Echo: tenant a" });
      const theirs = await b.submit(echo(), "tenant b", { queue: "t" });
      // Tenant A's credentials on tenant B's prefix: every read and write is refused.
      await expect(intruder.handle(theirs.taskId).status()).rejects.toThrow(/NOPERM/);
      await expect(intruder.listTasks()).rejects.toThrow(/NOPERM/);
      await expect(intruder.submit(echo(), "x", { queue: "t" })).rejects.toThrow(/NOPERM/);
      await expect(intruder.handle(theirs.taskId).cancel()).rejects.toThrow(/NOPERM/);
      await expect(intruder.handle(theirs.taskId).result({ timeoutMs: 2000 })).rejects.toThrow(/NOPERM/);
      expect((await b.handle(theirs.taskId).status()).status).toBe("PENDING");
      const r = new Redis(tenantUrl("tenant-a-client"), { maxRetriesPerRequest: 1 });
      r.on("error", () => {});
      try {
        await expect(r.hgetall(`${tenants.b}:task:{t}:x`)).rejects.toThrow(/NOPERM/);
        await expect(r.call("SSUBSCRIBE", `${tenants.b}:status:{t}`)).rejects.toThrow(/NOPERM/);
      } finally {
        r.disconnect();
      }
    } finally {
      await Promise.all([client, intruder, b].map((c) => c.close()));
      await worker.stop({ drainTimeoutMs: 500 });
    }
  });
});
