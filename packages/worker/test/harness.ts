import { Agent } from "@flotilla/agent";
import { TestBroker } from "@flotilla/broker/testing";
import { type AgentSpec, createKeys, DEFAULT_RETENTION, type JsonValue, newId, type Priority } from "@flotilla/core";
import { readEvents } from "@flotilla/events";
import { TestTaskStore } from "@flotilla/store/testing";
import { cleanupPrefix, redisUrl, testPrefix, testRedis, waitFor } from "@flotilla/tooling/test-utils";
import { afterAll, afterEach } from "vitest";
import { Worker, type WorkerOptions } from "../src/index.ts";

/** Real Redis, a prefix of its own, and the real store and broker to submit with. */
export function useHarness(name: string) {
  const prefix = testPrefix(name);
  const redis = testRedis();
  const keys = createKeys(prefix);
  const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
  const broker = new TestBroker(redis, keys);
  const workers: Worker[] = [];
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ drainTimeoutMs: 1000 })));
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    await redis.quit();
  });
  return {
    prefix,
    redis,
    keys,
    store,
    broker,
    async worker(options: WorkerOptions = {}) {
      const w = new Worker({ redis: redisUrl(), prefix, blockMs: 500, heartbeatTtlMs: 3000, ...options });
      workers.push(w);
      await w.start();
      return w;
    },
    async submit(
      agent: Agent | AgentSpec,
      input: JsonValue,
      opts: {
        queue?: string;
        timeoutMs?: number;
        detailed?: boolean;
        maxRetries?: number;
        maxDeliveries?: number;
        priority?: Priority;
      } = {},
    ) {
      const spec = "toJSON" in agent ? agent.toJSON() : agent;
      const queue = opts.queue ?? "default";
      const taskId = `${queue}/${newId()}`;
      await broker.ensureGroup(queue);
      await store.create({
        taskId,
        queue,
        agent: spec.name,
        payload: JSON.stringify({ agent: spec, input }),
        createdAt: Date.now(),
        detailed: opts.detailed ?? true,
        maxRetries: opts.maxRetries ?? 0,
        maxDeliveries: opts.maxDeliveries,
        timeoutMs: opts.timeoutMs,
        metadata: {},
        priority: opts.priority,
      });
      return taskId;
    },
    /**
     * Writes a PENDING record the way submit does, but without its queue entry, so a test can
     * corrupt it before enqueueing it by name (`broker.enqueue(queue, name)`).
     */
    async record(taskId: string, fields: Record<string, string | number>) {
      const [queue] = taskId.split("/");
      await broker.ensureGroup(queue!);
      await redis.hset(keys.task(taskId), {
        taskId,
        queue: queue!,
        agent: "fine",
        payload: "{}",
        createdAt: Date.now(),
        status: "PENDING",
        maxRetries: 0,
        maxDeliveries: 3,
        ...fields,
      });
      return taskId.slice(queue!.length + 1);
    },
    async until(taskId: string, statuses: string[] = ["COMPLETED", "FAILED", "CANCELLED"]) {
      return waitFor(
        async () => {
          const r = await store.get(taskId);
          return r && statuses.includes(r.status) ? r : undefined;
        },
        { what: `task ${taskId} to reach ${statuses.join("/")}` },
      );
    },
    async events(taskId: string) {
      return (await readEvents(redis, keys, taskId)).events as unknown as Array<Record<string, unknown>>;
    },
  };
}

export const scripted = (name: string, script: Record<string, unknown> = {}, extra: { tools?: string[]; model?: string } = {}) =>
  new Agent({ name, model: extra.model ?? "scripted:test", tools: extra.tools ?? [], options: { scripted: script as never } });
