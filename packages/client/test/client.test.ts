// @cluster: results and streams followed live (sharded Pub/Sub), cancels of running tasks
import { getEventListeners } from "node:events";
import net from "node:net";
import { Agent } from "@flotilla/agent";
import { createKeys } from "@flotilla/core";
import { collect, echo, keysUnder, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import {
  ConnectionError,
  DuplicateTaskError,
  distributed,
  FlotillaClient,
  type FlotillaEvent,
  TaskCancelledError,
  TaskFailedError,
  TaskNotFoundError,
  ValidationError,
  WaitTimeoutError,
} from "../src/index.ts";

describe("FlotillaClient", () => {
  const env = useFlotilla("client");

  it("runs tasks submitted before any worker started (group created at 0)", async () => {
    const client = env.client();
    const handles = await Promise.all([1, 2, 3].map((i) => client.submit(echo(), `early ${i}`, { queue: "early" })));
    expect((await handles[0]!.status()).status).toBe("PENDING");
    await env.worker({ queues: ["early"] });
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 10_000 })));
    expect(results).toMatchObject([{ text: "Echo: early 1" }, { text: "Echo: early 2" }, { text: "Echo: early 3" }]);
  });

  it("rejects bad input at submit with a typed error naming the field, and enqueues nothing", async () => {
    const client = env.client();
    const cases: Array<[() => Promise<unknown>, string]> = [
      [() => client.submit({ name: "a", model: "no-colon" } as never, "x"), "model"],
      [() => client.submit({ name: "", model: "scripted:x" } as never, "x"), "name"],
      [() => client.submit(echo(), "x", { queue: "bad{queue}" }), "queue"],
      [() => client.submit(echo(), "x", { timeoutMs: -5 }), "timeoutMs"],
      [() => client.submit(echo(), "x", { taskId: "has space" }), "taskId"],
      [() => client.submit(echo(), "x", { retries: 3 } as never), "retries"],
      [() => client.submit(echo(), (() => 1) as never), "input"],
      [() => client.submit(echo(), "x".repeat(2_000_000)), "input"],
    ];
    for (const [submit, field] of cases) {
      const err = await submit().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, (err as Error).message).toBe(field);
    }
    expect(await env.redis.exists(`${env.prefix}:queue:{default}`)).toBe(0);
  });

  it("rejects a duplicate task id and never enqueues it twice", async () => {
    const client = env.client();
    await client.submit(echo(), "first", { taskId: "my-id", queue: "dupes" });
    await expect(client.submit(echo(), "second", { taskId: "my-id", queue: "dupes" })).rejects.toBeInstanceOf(DuplicateTaskError);
    expect(await env.redis.xlen(`${env.prefix}:queue:{dupes}`)).toBe(1);
  });

  it("result() throws the task's error when it failed, and gives up after timeoutMs", async () => {
    const client = env.client();
    const waiting = await client.submit(echo(), "nobody serves this queue", { queue: "idle" });
    await expect(waiting.result({ timeoutMs: 100 })).rejects.toBeInstanceOf(WaitTimeoutError);
    await env.worker();
    const failing = await client.submit(echo({ failWith: "no tokens left" }), "x");
    const err = await failing.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskFailedError);
    expect((err as TaskFailedError).taskError).toEqual({ message: "no tokens left", code: "AGENT_ERROR" });
  });

  it("cancels a pending task at once; it is never run", async () => {
    const client = env.client();
    const handle = await client.submit(echo(), "never run me", { queue: "later" });
    expect(await handle.cancel("changed my mind")).toEqual({ outcome: "cancelled", status: "CANCELLED" });
    await expect(handle.result()).rejects.toBeInstanceOf(TaskCancelledError);
    const events = await collect(handle.stream());
    expect(events).toMatchObject([{ type: "status", status: "cancelled", error: { message: "changed my mind" } }]);
    let started = 0;
    await env.worker({ queues: ["later"] }, (w) => w.on("task:started", () => started++));
    await waitFor(async () => (await env.redis.xlen(`${env.prefix}:queue:{later}`)) === 0, { what: "entry acknowledged" });
    expect(started).toBe(0);
    expect(await handle.status()).toMatchObject({ status: "CANCELLED", attempt: 0 });
  });

  it("cancels a running task: its executor is aborted and it ends CANCELLED with a terminal event", async () => {
    const client = env.client();
    await env.worker();
    const handle = await client.submit(echo({ tokenDelayMs: 50 }), "word ".repeat(400));
    const events: FlotillaEvent[] = [];
    let outcome: unknown;
    for await (const e of handle.stream()) {
      events.push(e);
      if (e.type === "text" && !outcome) outcome = await handle.cancel("user pressed stop");
    }
    expect(outcome).toEqual({ outcome: "requested", status: "RUNNING" });
    expect(events.at(-1)).toMatchObject({ type: "status", status: "cancelled", error: { code: "CANCELLED", message: "user pressed stop" } });
    // Far fewer tokens than the 400-word reply: the run really stopped.
    expect(events.filter((e) => e.type === "text").length).toBeLessThan(50);
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskCancelledError);
    expect(await handle.cancel()).toEqual({ outcome: "finished", status: "CANCELLED" });
  });

  it("re-attaches from another client by id: status, replay and result", async () => {
    await env.worker();
    const handle = await env.client().submit(echo(), "from afar", { detailed: true });
    await handle.result();
    const elsewhere = env.client().handle(handle.taskId);
    expect((await elsewhere.status()).status).toBe("COMPLETED");
    expect(await elsewhere.result()).toMatchObject({ text: "Echo: from afar" });
    const replay = await collect(elsewhere.stream());
    expect(replay.map((e) => e.seq)).toEqual(replay.map((_, i) => i + 1));
    expect(replay.at(-1)).toMatchObject({ status: "completed" });
    expect(handle.taskId.startsWith("default/")).toBe(true);
    await expect(env.client().handle("default/unknown-task").status()).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(env.client().handle("default/unknown-task").cancel()).rejects.toBeInstanceOf(TaskNotFoundError);
    expect(() => env.client().handle("default/bad id")).toThrow(ValidationError);
    expect(() => env.client().handle("no-queue-part")).toThrow(ValidationError);
  });

  it("keeps only status and text events (and the result) unless detailed", async () => {
    await env.worker();
    const agent = new Agent({ name: "tooled", model: "scripted:x" });
    const handle = await env.client().submit(agent, "brief");
    const types = new Set((await collect(handle.stream())).map((e) => e.type));
    expect([...types].sort()).toEqual(["status", "text"]);
  });

  it("lists tasks newest first, by status and queue, page by page", async () => {
    const client = env.client();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await client.submit(echo(), `l${i}`, { queue: "listing" })).taskId);
    await client.handle(ids[1]!).cancel();
    const page1 = await client.listTasks({ queue: "listing", limit: 3 });
    const page2 = await client.listTasks({ queue: "listing", limit: 3, cursor: page1.nextCursor });
    expect([...page1.tasks, ...page2.tasks].map((t) => t.taskId)).toEqual([...ids].reverse());
    const cancelled = await client.listTasks({ queue: "listing", status: "CANCELLED" });
    expect(cancelled.tasks.map((t) => t.taskId)).toEqual([ids[1]]);
    // Each shows the head of its input; a client told to keep none keeps none.
    expect(page1.tasks.map((t) => t.inputPreview)).toEqual(["l4", "l3", "l2"]);
    const quiet = env.client({ inputPreviewChars: 0 });
    const hidden = await quiet.submit(echo(), "card 4242 4242 4242 4242", { queue: "listing" });
    expect(await hidden.status()).not.toHaveProperty("inputPreview");
    const long = await client.submit(echo(), { text: "x".repeat(300) }, { queue: "listing" });
    expect((await long.status()).inputPreview).toBe(`{"text":"${"x".repeat(91)}…`);
    await expect(client.listTasks({ status: "DONE" as never })).rejects.toBeInstanceOf(ValidationError);
  });

  it("expires finished records and event streams", async () => {
    await env.worker();
    const handle = await env.client().submit(echo(), "ttl");
    await handle.result();
    const keys = createKeys(env.prefix);
    expect(await env.redis.pttl(keys.task(handle.taskId))).toBeGreaterThan(0);
    expect(await env.redis.pttl(keys.events(handle.taskId))).toBeGreaterThan(0);
  });

  it("shows the fleet", async () => {
    const w = await env.worker({ queues: ["fleet"], concurrency: 2 });
    const fleet = await env.client().fleet.status();
    expect(fleet.workers.find((x) => x.workerId === w.workerId)).toMatchObject({ alive: true, queues: ["fleet"], concurrency: 2 });
  });

  it("result() leaves no listener on a long-lived signal once it returns", async () => {
    await env.worker();
    const client = env.client();
    const shutdown = new AbortController();
    for (let i = 0; i < 3; i++) await (await client.submit(echo(), `r${i}`)).result({ signal: shutdown.signal });
    const waiting = (await client.submit(echo(), "cut short", { queue: "nobody-serves" })).result({ signal: shutdown.signal, timeoutMs: 50 });
    await expect(waiting).rejects.toBeInstanceOf(WaitTimeoutError);
    expect(getEventListeners(shutdown.signal, "abort")).toHaveLength(0);
  });

  it("keeps the admin calls' old names working beside the sub-clients", async () => {
    const client = env.client();
    await client.submit(echo(), "waiting", { queue: "aliases" });
    // The same figures (the oldest entry's wait grows between the two reads).
    const { oldestWaitMs: _, ...old } = await client.queueDepth("aliases");
    const { oldestWaitMs: __, ...now } = await client.fleet.queueDepth("aliases");
    expect(old).toEqual(now);
    expect(await client.queueDepth("aliases")).toMatchObject({ waiting: 1 });
    expect(await client.listDeadLetters("aliases")).toEqual(await client.deadLetters.list("aliases"));
    expect(await client.getDeadLetter("aliases", "0-1")).toBeUndefined();
    await expect(client.requeueDeadLetter("aliases", "0-1")).rejects.toMatchObject({ code: "DEAD_LETTER_NOT_FOUND" });
    expect((await client.getFleetStatus()).workers).toEqual((await client.fleet.status()).workers);
    expect(await client.conversation("c-alias").messages()).toEqual([]);
  });

  it("submit and submitMany refuse the same bad input with the same message", async () => {
    const client = env.client();
    const bad: Array<[unknown, unknown, unknown]> = [
      [{ name: "a", model: "no-colon" }, "x", {}],
      [echo(), "x", { queue: "bad{queue}" }],
      [echo(), "x".repeat(2_000_000), {}],
      [echo(), "x", { taskId: "other/name", queue: "mine" }],
    ];
    for (const [agent, input, options] of bad) {
      const one = (await client.submit(agent as never, input as never, options as never).catch((e: unknown) => e)) as ValidationError;
      const many = (await client
        .submitMany([{ agent: agent as never, input: input as never, options: options as never }])
        .catch((e: unknown) => e)) as ValidationError;
      expect(one).toBeInstanceOf(ValidationError);
      expect(many).toBeInstanceOf(ValidationError);
      expect(many.field).toBe(`items.0.${one.field}`);
      expect(many.issues[0]!.message).toBe(one.issues[0]!.message);
    }
  });

  it("rejects circular input, options and agents with a ValidationError naming the path, writing nothing", async () => {
    const prefix = `${env.prefix}:circular`;
    const client = env.client({ prefix });
    const loop: Record<string, unknown> = { id: 1, list: [] };
    (loop.list as unknown[]).push({ back: loop });
    const shared = { n: 1 }; // referenced twice but no loop: fine for JSON, must not be refused
    const looped = echo().toJSON() as Record<string, unknown>;
    looped.options = { self: looped };
    const cases: Array<[unknown, unknown, unknown, string, string]> = [
      [echo(), { doc: loop }, {}, "input.doc.list.0.back", "input.doc.list.0.back refers back to input.doc"],
      [echo(), loop, {}, "input.list.0.back", "input.list.0.back refers back to input"],
      [echo(), "x", { metadata: { me: loop } }, "metadata.me.list.0.back", "options.metadata.me.list.0.back refers back to options.metadata.me"],
      [looped, "x", {}, "options.self", "agent.options.self refers back to agent"],
    ];
    for (const [agent, input, options, field, message] of cases) {
      const one = (await client.submit(agent as never, input as never, options as never).catch((e: unknown) => e)) as ValidationError;
      expect(one, field).toBeInstanceOf(ValidationError);
      expect(one.field).toBe(field);
      expect(one.message).toContain(`circular reference: ${message}`);
      const many = (await client
        .submitMany([
          { agent: echo(), input: { a: shared, b: shared } },
          { agent: agent as never, input: input as never, options: options as never },
        ])
        .catch((e: unknown) => e)) as ValidationError;
      expect(many, field).toBeInstanceOf(ValidationError);
      expect(many.field).toBe(`items.1.${field}`);
      expect(many.issues[0]!.message).toBe(one.issues[0]!.message);
    }
    expect(await keysUnder(env.redis, prefix)).toEqual([]);
    expect(await (await client.submit(echo(), { a: shared, b: shared })).status()).toMatchObject({ status: "PENDING" });
  });

  it("distributed() submits through the given client", async () => {
    await env.worker();
    const handle = await distributed(echo(), "via distributed", { client: env.client() });
    expect(await handle.result()).toMatchObject({ text: "Echo: via distributed" });
  });

  it("fails with a ConnectionError, not a hang, when Redis is unreachable", async () => {
    const client = new FlotillaClient({ redis: "redis://127.0.0.1:1", connectTimeoutMs: 500 });
    const err = await client.submit(echo(), "x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectionError);
    expect((err as ConnectionError).code).toBe("REDIS_UNAVAILABLE");
    expect((err as Error).message).toMatch(/127\.0\.0\.1:1/);
    await client.close();
  });

  it("fails with a ConnectionError, not a hang, when the server takes the connection and never answers", async () => {
    // A hung Redis, or a port where something else listens without speaking Redis.
    const silent = net.createServer((socket) => socket.on("data", () => {}));
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as net.AddressInfo;
    const client = new FlotillaClient({ redis: `redis://127.0.0.1:${port}`, connectTimeoutMs: 300 });
    try {
      const err = await client.submit(echo(), "x").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ConnectionError);
      expect((err as ConnectionError).code).toBe("REDIS_UNAVAILABLE");
    } finally {
      await client.close();
      silent.close();
    }
  });
});
