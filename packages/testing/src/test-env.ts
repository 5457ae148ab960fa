import { TestBroker } from "@flotilla/broker/testing";
import { type AgentLike, type ClientOptions, FlotillaClient, type SubmitOptions } from "@flotilla/client";
import { createKeys, DEFAULT_RETENTION, ErrorCodes, type JsonValue, type Keys, LifecycleError, splitTaskId, type TaskStatus } from "@flotilla/core";
import type { RedisConnection } from "@flotilla/core/redis";
import { type FlotillaEvent, readEvents } from "@flotilla/events";
import type { TaskResult } from "@flotilla/store";
import { TestTaskStore } from "@flotilla/store/testing";
import { Worker, type WorkerOptions } from "@flotilla/worker";
import type { Redis } from "ioredis";
import { redisUrl, testConnection, testRedis } from "./connection.ts";
import { testPrefix } from "./prefix.ts";
import { purgePrefix } from "./purge.ts";
import { waitFor } from "./wait-for.ts";

export interface TestEnvOptions {
  /** The Redis to run on (a URL). @default the suite's: testConnection() (its cluster on a cluster run, else REDIS_URL or redis://127.0.0.1:6379) */
  redis?: string;
  /** The key prefix; `close()` deletes every key under it. @default testPrefix(name), unique per env */
  prefix?: string;
}

export interface StopWorkersOptions {
  /** How long running tasks may take to finish before they are handed back. @default 1_000 */
  drainTimeoutMs?: number;
  /** Only these (of the env's workers). @default all of them */
  workers?: readonly Worker[];
}

/** What `worker()` sets unless told otherwise: a worker that notices work and stops quickly. */
export const TEST_WORKER_DEFAULTS: { readonly blockMs: number; readonly heartbeatTtlMs: number } = { blockMs: 500, heartbeatTtlMs: 3000 };

const TERMINAL: readonly TaskStatus[] = ["COMPLETED", "FAILED", "CANCELLED"];

/** Real Redis under a prefix of its own, with clients and workers on it, removed by `close()`. */
export interface TestEnv {
  readonly prefix: string;
  /** The Redis URL of the env (on a cluster run: one node's; spawned processes take `testRedisEnv()`). */
  readonly url: string;
  /** What the env's clients and workers connect with: `redis` when given, else testConnection(). */
  readonly connection: RedisConnection;
  /** Every key of the prefix (`createKeys(prefix)`). */
  readonly keys: Keys;
  /** An admin connection for a test's own reads and writes. */
  readonly redis: Redis;
  /** The task store on the admin connection, with the test-only calls (`start`, `finish`). */
  readonly store: TestTaskStore;
  /** The broker on the admin connection, with the test-only calls (`enqueue`, `claim`). */
  readonly broker: TestBroker;
  /** The workers started by `worker()` and not yet stopped through the env. */
  readonly workers: readonly Worker[];
  /** A new FlotillaClient on the prefix (closed by `close()`); `options` override redis and prefix too. */
  client(options?: ClientOptions): FlotillaClient;
  /**
   * A started Worker on the prefix with TEST_WORKER_DEFAULTS; `options` override anything. `listen`
   * runs before `start()`: a listener added after it may miss the first claim's events (the claim
   * loop runs while start() finishes).
   */
  worker(options?: WorkerOptions, listen?: (worker: Worker) => void): Promise<Worker>;
  /** Submits through the env's own client, `detailed: true` unless told otherwise; returns the task id. */
  submit(agent: AgentLike, input: JsonValue, options?: SubmitOptions): Promise<string>;
  /**
   * Writes a raw PENDING record (`<queue>/<name>`) the way submit does, but without its queue entry,
   * so a test can corrupt it (`fields` override any field) before enqueueing it by name with
   * `broker.enqueue(queue, name)`. Returns the name.
   */
  record(taskId: string, fields?: Record<string, string | number>): Promise<string>;
  /** Waits until the task reaches one of `statuses` (default: any terminal one) and returns its record. */
  until(taskId: string, statuses?: readonly TaskStatus[], options?: { timeoutMs?: number }): Promise<TaskResult>;
  /** Every stored event of the task (status events and the rest), in seq order. */
  events(taskId: string): Promise<FlotillaEvent[]>;
  /** Stops the env's workers (or `options.workers`), letting running tasks finish for `drainTimeoutMs`. */
  stopWorkers(options?: StopWorkersOptions): Promise<void>;
  /** Stops the workers, closes the clients, deletes every key under the prefix and closes the admin connection. */
  close(): Promise<void>;
}

/** Sets up a test environment on real Redis; framework-agnostic: call `close()` when done. */
export function createTestEnv(name: string, options: TestEnvOptions = {}): TestEnv {
  const url = options.redis ?? redisUrl();
  const connection = options.redis ?? testConnection();
  const prefix = options.prefix ?? testPrefix(name);
  const keys = createKeys(prefix);
  const redis = testRedis(options.redis);
  const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
  const broker = new TestBroker(redis, keys);
  const workers: Worker[] = [];
  const clients: FlotillaClient[] = [];
  let submitter: FlotillaClient | undefined;
  let closing: Promise<void> | undefined;

  const assertOpen = () => {
    if (closing) throw new LifecycleError(ErrorCodes.CLOSED, `test env ${prefix} is closed`);
  };

  const client = (clientOptions: ClientOptions = {}): FlotillaClient => {
    assertOpen();
    const c = new FlotillaClient({ redis: connection, prefix, ...clientOptions });
    clients.push(c);
    return c;
  };

  const stopWorkers = async ({ drainTimeoutMs = 1000, workers: only }: StopWorkersOptions = {}): Promise<void> => {
    const stopping = only ? workers.filter((w) => only.includes(w)) : [...workers];
    for (const w of stopping) workers.splice(workers.indexOf(w), 1);
    await Promise.all(stopping.map((w) => w.stop({ drainTimeoutMs })));
  };

  return {
    prefix,
    url,
    connection,
    keys,
    redis,
    store,
    broker,
    get workers() {
      return [...workers];
    },
    client,
    async worker(workerOptions = {}, listen) {
      assertOpen();
      const w = new Worker({ redis: connection, prefix, ...TEST_WORKER_DEFAULTS, ...workerOptions });
      workers.push(w);
      listen?.(w);
      try {
        await w.start();
      } catch (err) {
        await stopWorkers({ workers: [w], drainTimeoutMs: 0 }).catch(() => {});
        throw err;
      }
      return w;
    },
    async submit(agent, input, submitOptions = {}) {
      submitter ??= client();
      return (await submitter.submit(agent, input, { detailed: true, ...submitOptions })).taskId;
    },
    async record(taskId, fields = {}) {
      await broker.ensureGroup(splitTaskId(taskId).queue);
      return store.writeRaw(taskId, fields);
    },
    until(taskId, statuses = TERMINAL, untilOptions = {}) {
      return waitFor(
        async () => {
          const r = await store.get(taskId);
          return r && statuses.includes(r.status) ? r : undefined;
        },
        { timeoutMs: untilOptions.timeoutMs, what: `task ${taskId} to reach ${statuses.join("/")}` },
      );
    },
    async events(taskId) {
      return (await readEvents(redis, keys, taskId)).events;
    },
    stopWorkers,
    close() {
      closing ??= (async () => {
        try {
          await stopWorkers();
          await Promise.allSettled(clients.splice(0).map((c) => c.close()));
          await purgePrefix(redis, prefix);
        } finally {
          if (redis.status === "wait" || redis.status === "end") redis.disconnect();
          else await redis.quit().catch(() => redis.disconnect());
        }
      })();
      return closing;
    },
  };
}
