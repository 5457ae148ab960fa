import { DEFAULTS, parseInput, QueueNameSchema, type Retention, type RetentionOptions, resolveRetention, ValidationError } from "@flotilla/core";
import { type ConnectionOptions, type RedisConnection, resolveConnectionOptions } from "@flotilla/core/redis";
import type { MemoryStore } from "@flotilla/memory";
import { defaultMetrics, type FlotillaMetrics } from "@flotilla/metrics";
import { INPUT_PREVIEW_CHARS } from "@flotilla/store";
import { z } from "zod";

/**
 * `redis`, `prefix` and `connectTimeoutMs` are the connection options the Bus takes too: an option
 * given wins, else its environment variable (REDIS_CLUSTER_NODES, REDIS_URL, FLOTILLA_PREFIX), else
 * the default — the rule of every Flotilla entry point.
 */
export interface ClientOptions extends ConnectionOptions {
  /** How long records, events and dead letters are kept. @default DEFAULT_RETENTION */
  retention?: RetentionOptions;
  /** Largest accepted payload (agent + input) as JSON. @default 1_048_576 */
  maxPayloadBytes?: number;
  /**
   * Deepest nesting of objects and arrays accepted in a submit's agent, input and metadata; deeper
   * is a ValidationError (nothing is written). Workers check what they read against their own. @default 128
   */
  maxJsonDepth?: number;
  /** Memory stores by name, for `conversations`; `redis` (this client's connection) is built in. @default { redis } */
  memory?: Record<string, MemoryStore>;
  /** Where submit counts go (OpenTelemetry, and readable with `snapshot()`). @default defaultMetrics() */
  metrics?: FlotillaMetrics;
  /**
   * Per-queue default of `concurrencyLimit`, for tasks submitted with a `concurrencyKey` and no limit
   * (e.g. `{ chat: 4 }`: at most 4 of a tenant's chat tasks at once). @default {}: such a task's limit is 1
   */
  concurrencyLimits?: Record<string, number>;
  /**
   * Durable submits: a submit resolves only once `replicas` replicas of the queue's master have its
   * task (Redis WAIT after the write, for up to `timeoutMs`, default 1_000). Fewer in time: a
   * NotReplicatedError (code NOT_REPLICATED) naming the tasks, which exist on the master and may
   * not survive a failover now (look them up before you submit them again). Each submit ends
   * within its own `timeoutMs` (plus a round trip), however many are in flight: the WAIT goes on
   * connections of the client's own (up to 4, opened on first use), after a mark written in the
   * queue's slot, and one WAIT covers every submit of that slot answered before it; the client's
   * other calls never wait behind it. Costs two commands per round of submits in flight together.
   * @default undefined: a submit resolves once the master
   * has the task, and a failover in the next moments may lose it (replication is asynchronous)
   */
  durableSubmit?: { replicas: number; timeoutMs?: number };
  /**
   * How many characters of each task's input its record keeps for task lists (`listTasks`, the
   * dashboard, `flotilla tasks`): a string input as it is, anything else as JSON, on one line. 0
   * keeps none, for inputs that must not be shown beside a task's status. @default 100
   */
  inputPreviewChars?: number;
  /**
   * Signed tasks: every task this client submits is signed (HMAC-SHA256 of its id, payload and
   * metadata) with this secret, for workers that verify (`signingSecrets`). @default undefined: unsigned
   */
  signingSecret?: string;
}

export interface ResolvedClientOptions {
  redis: RedisConnection | undefined;
  prefix: string;
  retention: Retention;
  maxPayloadBytes: number;
  maxJsonDepth: number;
  connectTimeoutMs: number;
  memory: Record<string, MemoryStore> | undefined;
  metrics: FlotillaMetrics;
  concurrencyLimits: Record<string, number>;
  durableSubmit: { replicas: number; timeoutMs: number } | undefined;
  signingSecret: string | undefined;
  inputPreviewChars: number;
}

const InputPreviewCharsSchema = z.number().int().min(0).max(1000);
const SigningSecretSchema = z.string().min(16, "must be at least 16 characters");
const DurableSubmitSchema = z.object({ replicas: z.number().int().min(1).max(100), timeoutMs: z.number().int().positive().default(1_000) }).strict();

const ConcurrencyLimitsSchema = z.record(QueueNameSchema, z.number().int().min(1).max(100_000));

/** Every option `new FlotillaClient()` knows: any other key is refused (a misspelt option would be ignored silently). */
const CLIENT_OPTION_KEYS: ReadonlySet<string> = new Set<keyof ClientOptions>([
  "redis",
  "prefix",
  "connectTimeoutMs",
  "retention",
  "maxPayloadBytes",
  "maxJsonDepth",
  "memory",
  "metrics",
  "concurrencyLimits",
  "durableSubmit",
  "signingSecret",
  "inputPreviewChars",
]);

/** The one place the client's defaults are applied. */
export function resolveClientOptions(options: ClientOptions): ResolvedClientOptions {
  if (typeof options !== "object" || options === null) throw ValidationError.of("client options", "options", "must be an object");
  const unknown = Object.keys(options).find((key) => !CLIENT_OPTION_KEYS.has(key));
  if (unknown !== undefined) throw ValidationError.of("client options", unknown, "is not a FlotillaClient option");
  const connection = resolveConnectionOptions(options);
  return {
    redis: connection.redis,
    prefix: connection.prefix,
    retention: resolveRetention(options.retention),
    maxPayloadBytes: options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes,
    maxJsonDepth: options.maxJsonDepth ?? DEFAULTS.maxJsonDepth,
    connectTimeoutMs: connection.connectTimeoutMs,
    memory: options.memory,
    metrics: options.metrics ?? defaultMetrics(),
    concurrencyLimits: parseInput(ConcurrencyLimitsSchema, options.concurrencyLimits ?? {}, "concurrencyLimits"),
    durableSubmit: options.durableSubmit === undefined ? undefined : parseInput(DurableSubmitSchema, options.durableSubmit, "durableSubmit"),
    signingSecret: options.signingSecret === undefined ? undefined : parseInput(SigningSecretSchema, options.signingSecret, "signingSecret"),
    inputPreviewChars: parseInput(InputPreviewCharsSchema, options.inputPreviewChars ?? INPUT_PREVIEW_CHARS, "inputPreviewChars"),
  };
}
