// Issue 17: every Lua script touches one slot. Each script is run through the packages' public APIs
// on a Redis Cluster of its own, each flow asserting its own outcome. On a cluster Redis refuses a
// script whose declared keys lie in several slots (CROSSSLOT), and fails one that touches an
// undeclared key of another slot, so flows that succeed there are the proof; what the workers only
// log (upkeep, schedule rounds) is checked in their logs. Then every master is asked which scripts
// it has cached: a script is cached on the node that ran it (ioredis sends EVAL first on each
// connection), and the list of scripts comes from the Lua sources themselves, so a script added
// later fails this test until a flow here runs it. The cache alone proves a script was sent, not
// that it worked (one that fails on an undeclared key is cached all the same): the flows' own
// outcomes prove that.
import { createHash } from "node:crypto";
import { basename } from "node:path";
import { defineTool } from "@flotilla/agent";
import { Broker } from "@flotilla/broker";
import { Bus, busWorker, subscribe } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { CONSUMER_GROUP, createKeys, ErrorCodes, sleep, TaskFailedError, UnrecoverableError } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis } from "@flotilla/core/redis";
import { readEvents } from "@flotilla/events";
import { defineNode, graphWorker } from "@flotilla/graph";
import { RedisRateLimiter } from "@flotilla/ratelimit";
import { onCluster, recordingLogger, scripted, startRedisCluster, type TestRedisCluster, testPrefix, waitFor } from "@flotilla/testing";
import { Worker, type WorkerOptions } from "@flotilla/worker";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { buildScripts, luaPackages } from "../lua/build.mjs";

const sha1 = (text: string) => createHash("sha1").update(text).digest("hex");

/** Every script of every package, as the Lua build makes it; its SHA is what LuaScript sends (EVALSHA). */
const scripts = luaPackages().flatMap((dir) => buildScripts(dir).map((s) => ({ id: `${basename(dir)}/${s.name}`, sha: sha1(s.lua) })));
const shas = scripts.map((s) => s.sha);

/** The errors a script breaking the one-slot rule meets on a cluster. */
const SLOT_ERROR = /CROSSSLOT|non local key|same slot|MOVED|ASK /;
/** What the flows make the workers warn about; any other warning (an upkeep or a round that failed) fails the test. */
const EXPECTED_WARNINGS = [/^entry dead-lettered$/, /^event dead-lettered$/, /^a due schedule had no hash/];

// A short lease: renewals, reclaims and prunes come within a second or two.
const LEASE_MS = 1500;
const Q = {
  tasks: "st-tasks",
  retry: "st-retry",
  hitl: "st-hitl",
  unserved: "st-unserved",
  corrupt: "st-corrupt",
  malformed: "st-malformed",
  orphan: "st-orphan",
  released: "st-released",
} as const;
const T = { ok: "st.ok", flaky: "st.flaky", poison: "st.poison", slow: "st.slow" } as const;

/** Which of `shas` some master has cached (SCRIPT EXISTS asked of each: a node knows only its own cache). */
async function cachedOnSomeMaster(cluster: TestRedisCluster, shas: readonly string[]): Promise<boolean[]> {
  const found = shas.map(() => false);
  for (const { host, port } of await cluster.masters()) {
    const node = new Redis({ host, port, lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await node.connect();
      const exists = (await node.call("SCRIPT", "EXISTS", ...shas)) as number[];
      exists.forEach((e, i) => {
        if (e === 1) found[i] = true;
      });
    } finally {
      node.disconnect();
    }
  }
  return found;
}

// It starts a cluster of its own (fresh script caches): the suite's cluster pass would only run it a second time.
describe.skipIf(onCluster())("every Lua script on a Redis Cluster", () => {
  const prefix = testPrefix("scripts-on-cluster");
  const keys = createKeys(prefix);
  const logs = recordingLogger();
  const workerErrors: unknown[] = [];
  let cluster: TestRedisCluster;
  let redis: { cluster: Array<{ host: string; port: number }> };
  let admin: OwnedRedis;
  let client: FlotillaClient;
  let bus: Bus;
  let broker: Broker;
  const workers: Worker[] = [];

  /** A started worker on the cluster and prefix, its errors and log lines kept for the last check. */
  async function startWorker(options: WorkerOptions): Promise<Worker> {
    const w = new Worker({ redis, prefix, leaseMs: LEASE_MS, blockMs: 200, heartbeatTtlMs: 3000, promoteIntervalMs: 100, logger: logs.log, ...options });
    w.on("worker:error", (err) => workerErrors.push(err));
    workers.push(w);
    await w.start();
    return w;
  }

  // What the main worker's handlers saw.
  const seen = {
    ok: 0,
    flaky: [] as number[],
    poisonHealed: false,
    poisonHandled: [] as unknown[],
    slow: [] as number[],
  };
  let graphBroken = true;
  const approveTool = defineTool({
    name: "st_send",
    description: "sends something once approved",
    inputSchema: z.object({ to: z.string() }),
    approval: true,
    execute: (args) => `sent to ${args.to}`,
  });
  let main: Worker;

  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 0 });
    redis = { cluster: cluster.nodes.map(({ host, port }) => ({ host, port })) };
    admin = openRedis(redis, "command", { failFast: true });
    broker = new Broker(admin.redis, keys);
    client = new FlotillaClient({ redis, prefix });
    bus = new Bus({ redis, prefix });
    // Checked before anything ran a script: a fresh cluster has none cached.
    const cachedAtStart = await cachedOnSomeMaster(cluster, shas);
    expect(scripts.filter((_, i) => cachedAtStart[i]).map((s) => s.id)).toEqual([]);
    main = await startWorker({
      queues: [Q.tasks, Q.retry, Q.hitl],
      concurrency: 8,
      tools: [approveTool],
      graph: graphWorker({
        nodes: [
          defineNode({ type: "st-upper", execute: (s: string) => s.toUpperCase() }),
          defineNode({
            type: "st-flaky",
            execute: () => {
              if (graphBroken) throw new Error("not fixed yet");
              return "fixed";
            },
          }),
        ],
        handoffGraceMs: 300,
        sweepIntervalMs: 100,
      }),
      bus: busWorker({
        // maxLen 1: the upkeep's trim takes everything settled.
        maxLen: 1,
        webhooks: false,
        subscriptions: [
          subscribe(
            T.ok,
            () => {
              seen.ok++;
            },
            { name: "counter", reclaimAfterMs: LEASE_MS },
          ),
          subscribe(
            T.flaky,
            (_e, ctx) => {
              seen.flaky.push(ctx.deliveryCount);
              if (ctx.deliveryCount === 1) throw new Error("the first delivery fails");
            },
            { name: "flaky", maxRetries: 2, backoff: { delayMs: 50, maxDelayMs: 50, jitter: 0 }, reclaimAfterMs: LEASE_MS },
          ),
          subscribe(
            T.poison,
            (e) => {
              if (!seen.poisonHealed) throw new UnrecoverableError("poisoned");
              seen.poisonHandled.push(e.payload);
            },
            { name: "poison", reclaimAfterMs: LEASE_MS },
          ),
          subscribe(
            T.slow,
            async (_e, ctx) => {
              seen.slow.push(ctx.deliveryCount);
              await sleep(2500, ctx.signal);
            },
            // Renewed every 333 ms; without renewals the delivery would lapse and be reclaimed mid-run.
            { name: "slow", reclaimAfterMs: 1000 },
          ),
        ],
      }),
    });
  }, 60_000);

  afterAll(async () => {
    try {
      await Promise.allSettled(workers.map((w) => w.stop({ drainTimeoutMs: 500 })));
      await Promise.allSettled([client?.close(), bus?.close(), closeRedis(admin)]);
    } finally {
      await cluster?.stop();
    }
  }, 60_000);

  it("tasks: submit and submitMany, run to completion by a worker whose heartbeat lists it; text events published as they run", async () => {
    const one = await client.submit(scripted("st-echo"), "one", { queue: Q.tasks });
    const many = await client.submitMany(["two", "three"].map((input) => ({ agent: scripted("st-echo"), input, options: { queue: Q.tasks } })));
    expect(await one.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: one" });
    expect(await Promise.all(many.map(async (h) => (await h.result({ timeoutMs: 10_000 })).text))).toEqual(["Echo: two", "Echo: three"]);
    const { events } = await readEvents(admin.redis, keys, one.taskId);
    expect(events.flatMap((e) => (e.type === "text" ? [e.delta] : [])).join("")).toBe("Echo: one");
    expect((await client.fleet.status()).workers.map((w) => w.workerId)).toContain(main.workerId);
  });

  it("a delayed task is promoted into its queue and runs", async () => {
    const handle = await client.submit(scripted("st-later"), "later", { queue: Q.tasks, delayMs: 300 });
    expect((await handle.status()).status).toBe("PENDING");
    expect(await handle.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: later" });
  });

  it("a task running past its lease keeps it: its lease is renewed, and it completes on its first attempt", async () => {
    const reply = Array.from({ length: 20 }, (_, i) => `w${i}`).join(" ");
    const handle = await client.submit(scripted("st-slow", { reply, tokenDelayMs: 120 }), "x", { queue: Q.tasks });
    expect(await handle.result({ timeoutMs: 15_000 })).toMatchObject({ text: reply });
    const record = await handle.status();
    expect(record).toMatchObject({ status: "COMPLETED", attempt: 1 });
    expect(record.durationMs).toBeGreaterThan(LEASE_MS);
  });

  it("a failing task is retried, then dead-lettered; requeued, it runs again", async () => {
    const handle = await client.submit(scripted("st-fails", { failWith: "boom" }), "x", {
      queue: Q.retry,
      maxRetries: 1,
      backoff: { delayMs: 100, maxDelayMs: 100, jitter: 0 },
    });
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(TaskFailedError);
    expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 2, retries: 1 });
    const letter = await waitFor(() => client.deadLetters.forTask(handle.taskId), { what: "the dead letter" });
    await handle.retry();
    // Its letter is taken back; the task runs (and fails) twice more, leaving a new letter.
    const again = await waitFor(
      async () => {
        const l = await client.deadLetters.forTask(handle.taskId);
        return l && l.id !== letter.id ? l : undefined;
      },
      { what: "the requeued task's new dead letter" },
    );
    expect(again.taskId).toBe(handle.taskId);
    expect(await handle.status()).toMatchObject({ status: "FAILED", attempt: 4 });
  });

  it("cancel: a waiting task ends CANCELLED at once, a running one is aborted", async () => {
    const waiting = await client.submit(scripted("st-never"), "x", { queue: Q.unserved });
    expect(await waiting.cancel("not wanted")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    expect((await waiting.status()).status).toBe("CANCELLED");

    const running = await client.submit(scripted("st-long", { reply: "a b c d e f g h i j k l m n o p", tokenDelayMs: 500 }), "x", { queue: Q.tasks });
    await waitFor(async () => (await running.status()).status === "RUNNING", { what: "the task to run" });
    expect(await running.cancel("stop")).toMatchObject({ outcome: "requested" });
    await waitFor(async () => (await running.status()).status === "CANCELLED", { what: "the running task to end CANCELLED" });
  });

  it("a task waiting for approval goes back to its queue when approved (a signal) and finishes; a message sent to one joins it", async () => {
    const agent = scripted("st-mailer", { toolCalls: [{ name: "st_send", args: { to: "ops" } }] }, { tools: ["st_send"] });
    const handle = await client.submit(agent, "send it", { queue: Q.hitl });
    await waitFor(async () => (await handle.status()).status === "WAITING", { what: "the task to wait for approval" });
    await handle.approve();
    expect(await handle.result({ timeoutMs: 10_000 })).toMatchObject({ text: "st_send returned sent to ops. Echo: send it" });

    // Sent while it waits: taken when it runs again (the scripted model answers a user message with its tool call, so it waits again).
    const steered = await client.submit(agent, "send it", { queue: Q.hitl });
    await waitFor(async () => (await steered.status()).status === "WAITING", { what: "the task to wait for approval" });
    const { messageId } = await steered.send("cc the team");
    await steered.approve();
    const joined = await waitFor(async () => (await readEvents(admin.redis, keys, steered.taskId)).events.find((e) => e.type === "user-message"), {
      what: "the message to join",
    });
    expect(joined).toMatchObject({ messageId, content: "cc the team" });
    await steered.cancel();
  });

  it("a corrupt record is failed, a malformed entry dead-lettered, an entry given back runs, a dead consumer's task reclaimed and the consumer then forgotten", async () => {
    // Set up before any worker serves these queues.
    const corrupt = await client.submit(scripted("st-corrupt"), "x", { queue: Q.corrupt });
    await admin.redis.hset(keys.task(corrupt.taskId), "attempt", "abc");
    await broker.ensureGroup(Q.malformed);
    const malformedId = (await admin.redis.xadd(keys.queue(Q.malformed), "*", "foo", "bar"))!;
    // A consumer that takes the task and dies: its entry stays pending under it.
    const orphan = await client.submit(scripted("st-orphan"), "orphan", { queue: Q.orphan });
    const blocking = openRedis(redis, "blocking", { failFast: true });
    // A consumer that read an entry it has no slot for gives it back, unread, for any worker.
    const released = await client.submit(scripted("st-released"), "released", { queue: Q.released });
    try {
      expect(await broker.block(blocking.redis, "st-ghost", [Q.orphan], 1, 100)).toHaveLength(1);
      const [read] = await broker.block(blocking.redis, "st-reader", [Q.released], 1, 100);
      expect(await broker.release(Q.released, "st-reader", [{ priority: read!.priority, entryId: read!.entryId, name: read!.fields!.task! }])).toBe(1);
    } finally {
      await closeRedis(blocking);
    }

    const late = await startWorker({ queues: [Q.corrupt, Q.malformed, Q.orphan, Q.released], schedules: false });
    expect(await released.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: released" });
    // Its record cannot be read back (the client refuses it too): the dead letter and the raw status tell.
    const letter = await waitFor(() => client.deadLetters.forTask(corrupt.taskId), { what: "the corrupt task's dead letter" });
    expect(letter.reason).toMatch(/^corrupt task record: .*attempt is not a number/);
    expect(await admin.redis.hget(keys.task(corrupt.taskId), "status")).toBe("FAILED");
    const malformed = await waitFor(async () => (await broker.listDeadLetters(Q.malformed)).find((l) => l.entryId === malformedId), {
      what: "the malformed entry's dead letter",
    });
    expect(malformed.reason).toMatch(/malformed queue entry/);
    // Only a reclaim delivers an entry pending under another consumer.
    expect(await orphan.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: orphan" });
    expect(await orphan.status()).toMatchObject({ status: "COMPLETED", workerId: late.workerId });

    const consumers = async () =>
      ((await admin.redis.xinfo("CONSUMERS", keys.lane(Q.orphan, "normal"), CONSUMER_GROUP)) as unknown[][]).map((c) => String(c[1]));
    expect(await consumers()).toContain("st-ghost");
    expect(await broker.pruneConsumers(Q.orphan, 100, late.workerId)).toBe(1);
    expect(await consumers()).not.toContain("st-ghost");
  });

  it("graphs: a template saved and run; a waiting run cancelled; a task name closed by a cancel; a failed run retried to success", async () => {
    expect(await client.graphs.templates.save({ name: "st-shout", nodes: [{ id: "shout", type: "st-upper" }] })).toEqual({ name: "st-shout", version: 1 });
    const run = await client.startGraph("st-shout@1", "hello");
    expect(await run.result({ timeoutMs: 10_000 })).toEqual({ shout: "HELLO" });

    // No worker serves its node's type: it waits until cancelled.
    const idle = await client.startGraph({ nodes: [{ id: "idle", type: "st-unserved" }] }, null);
    expect(await idle.cancel("not wanted")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    await expect(idle.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_CANCELLED });
    expect((await idle.status()).nodes.map((n) => n.status)).toEqual(["CANCELLED"]);

    // Cancelled between a hand-off's two steps (its advance made `late`, whose task is not created
    // yet): the cancel closes the task's name in its queue's slot, and the late create is a no-op.
    const handOff = await client.startGraph(
      {
        nodes: [
          { id: "first", type: "st-unserved", next: ["late"] },
          { id: "late", type: "st-unserved-late" },
        ],
      },
      null,
    );
    await client.graphs.engine.runs.advance(handOff.runId, [{ instance: "first@#1", outcome: "EXECUTED", output: "{}" }], 60_000);
    expect(await handOff.cancel("between the steps")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    await client.graphs.engine.createTasks(handOff.runId, ["late@#1"]);
    const late = (await handOff.status()).nodes.find((n) => n.instance === "late@#1")!;
    expect(late.status).toBe("CANCELLED");
    expect(await client.handle(late.taskId).status()).toMatchObject({ status: "CANCELLED", attempt: 0 });

    const flaky = await client.startGraph({ nodes: [{ id: "f", type: "st-flaky" }] }, null);
    await expect(flaky.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ code: ErrorCodes.RUN_FAILED });
    await expect(run.retry()).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, status: "SUCCEEDED" });
    graphBroken = false;
    expect(await flaky.retry()).toBe(flaky);
    expect(await flaky.result({ timeoutMs: 10_000 })).toEqual({ f: "fixed" });
  });

  it("rate limits: a grant, tokens accounted past the estimate, a pause", async () => {
    const limiter = new RedisRateLimiter(admin.redis, keys, [
      { name: "st-tokens", tokensPerMinute: 6000 },
      { name: "st-paused", requestsPerMinute: 600 },
    ]);
    await limiter.acquire("st-tokens", { tokens: 10 }, AbortSignal.timeout(5000));
    await limiter.acquire("st-paused", { requests: 1 }, AbortSignal.timeout(5000));
    // A call that used far more than its estimate: the bucket owes for hours, and grants nothing now.
    await limiter.account("st-tokens", 1_000_000);
    await expect(limiter.acquire("st-tokens", { tokens: 10 }, AbortSignal.timeout(300))).rejects.toMatchObject({ name: "TimeoutError" });
    // A provider's Retry-After: the limit grants nothing to anyone until it passes.
    await limiter.pause("st-paused", 60_000);
    await expect(limiter.acquire("st-paused", { requests: 1 }, AbortSignal.timeout(300))).rejects.toMatchObject({ name: "TimeoutError" });
  });

  it("schedules: fired by the workers, paused, resumed, deleted; a due schedule without its hash is forgotten", async () => {
    await client.schedules.create({ id: "st-tick", every: 1000, agent: scripted("st-ticker"), input: "tick", options: { queue: Q.tasks } });
    const fired = await waitFor(
      async () => {
        const s = await client.schedules.get("st-tick");
        return s?.lastTaskId ? s : undefined;
      },
      { what: "a tick to fire", timeoutMs: 10_000 },
    );
    expect(fired.fired).toBeGreaterThanOrEqual(1);
    expect(await client.handle(fired.lastTaskId!).result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: tick" });
    expect(await client.schedules.pause("st-tick")).toBe(true);
    expect(await client.schedules.get("st-tick")).toMatchObject({ paused: true, nextTickAt: undefined });
    expect(await client.schedules.resume("st-tick")).toBe(true);
    expect((await client.schedules.get("st-tick"))?.nextTickAt).toBeGreaterThan(0);
    expect(await client.schedules.delete("st-tick")).toBe(true);
    expect(await client.schedules.get("st-tick")).toBeUndefined();

    await client.schedules.create({ id: "st-orphan", every: 1000, agent: scripted("st-ticker"), input: "tick", options: { queue: Q.tasks } });
    // Its hash gone (deleted by hand, say) while it is still due: the scheduler drops it from the due set.
    await admin.redis.del(keys.schedule("st-orphan"));
    await waitFor(async () => (await admin.redis.zscore(keys.schedulesDue(), "st-orphan")) === null, { what: "the orphan to be forgotten" });
    // Logged once the script that forgot it has answered: our read of the due set may come first.
    await waitFor(() => logs.lines.some((l) => /had no hash/.test(l.message) && l.fields?.schedule === "st-orphan"), { what: "the orphan's warning" });
  });

  it("bus: published events handled and acked; a failed delivery retried; a poisoned one dead-lettered and republished; a slow one kept", async () => {
    await bus.publishMany(Array.from({ length: 250 }, (_, i) => ({ topic: T.ok, payload: { i } })));
    await bus.publish(T.flaky, "once more");
    await bus.publish(T.poison, "bad");
    await bus.publish(T.slow, "slow");

    await waitFor(() => seen.ok === 250, { what: "250 events handled" });
    await waitFor(async () => (await bus.groups(T.ok)).find((g) => g.name === "counter")?.counts.acked === 250, { what: "250 acks" });
    // Delivered again after the retry's backoff (taken by the reclaim scan), then acked.
    await waitFor(async () => (await bus.groups(T.flaky))[0]?.counts.acked === 1, { what: "the flaky event's ack" });
    expect(seen.flaky).toEqual([1, 2]);
    expect((await bus.groups(T.flaky))[0]?.counts).toMatchObject({ retried: 1, acked: 1, dead: 0 });

    const [letter] = await waitFor(async () => {
      const l = await bus.deadLetters.list(T.poison, "poison");
      return l.length > 0 ? l : undefined;
    });
    expect(letter).toMatchObject({ reason: ErrorCodes.UNRECOVERABLE, attempts: 1 });
    seen.poisonHealed = true;
    const republished = await bus.deadLetters.republish(T.poison, "poison");
    expect(Object.keys(republished)).toEqual([letter!.id]);
    await waitFor(() => seen.poisonHandled.length === 1, { what: "the republished event to be handled" });
    expect(await bus.deadLetters.list(T.poison, "poison")).toEqual([]);

    // Handled for 2.5 s under a 1 s lease: renewed, never reclaimed nor delivered again.
    await waitFor(async () => (await bus.groups(T.slow))[0]?.counts.acked === 1, { what: "the slow event's ack" });
    expect(seen.slow).toEqual([1]);
    expect((await bus.groups(T.slow))[0]?.counts).toMatchObject({ reclaimed: 0, delivered: 1 });
  });

  it("bus upkeep trims a topic whose events are settled, then prunes idle consumers without error", async () => {
    // The upkeep runs every 10 s: the trim, then the prune, whose failure would only be logged. (No
    // consumer here is idle for the ten minutes a prune wants, so what it forgets cannot be seen.)
    await waitFor(async () => (await admin.redis.xlen(keys.topic(T.ok))) < 250, { what: "the topic to be trimmed", timeoutMs: 20_000 });
    const prune = scripts.find((s) => s.id === "bus/pruneConsumers")!;
    await waitFor(async () => (await cachedOnSomeMaster(cluster, [prune.sha]))[0], { what: "the upkeep's prune to run", timeoutMs: 5000 });
    // Checked again, with every other warning, by the last test.
    expect(logs.lines.filter((l) => /bus upkeep failed/.test(l.message))).toEqual([]);
  }, 30_000);

  it("bus: a subscription deleted once no worker serves it", async () => {
    await Promise.all(workers.map((w) => w.stop({ drainTimeoutMs: 1000 })));
    expect(await bus.deleteSubscription(T.ok, "counter")).toBe(true);
    expect(await bus.groups(T.ok)).toEqual([]);
    expect(await bus.deleteSubscription(T.ok, "counter")).toBe(false);
  });

  it("every script ran on the cluster: each is cached on a master, and nothing met a slot error", async () => {
    // As many as the packages hold today: fewer would mean the build found fewer, not that fewer exist.
    expect(scripts.length).toBeGreaterThanOrEqual(40);
    const cached = await cachedOnSomeMaster(cluster, [...shas, sha1("return 'never run'")]);
    // A script never sent is not reported cached: SCRIPT EXISTS answers per script.
    expect(cached.pop()).toBe(false);
    expect(scripts.filter((_, i) => !cached[i]).map((s) => s.id)).toEqual([]);
    // What the workers ride out is only logged (or emitted): a script refused there shows here.
    const warnings = logs.lines.filter((l) => l.level === "warn" || l.level === "error");
    const slotErrors = [...workerErrors.map(String), ...warnings.map((l) => `${l.message} ${String(l.fields?.err ?? "")}`)].filter((text) =>
      SLOT_ERROR.test(text),
    );
    expect(slotErrors).toEqual([]);
    expect(workerErrors).toEqual([]);
    expect(warnings.map((l) => l.message).filter((m) => !EXPECTED_WARNINGS.some((w) => w.test(m)))).toEqual([]);
  });
});
