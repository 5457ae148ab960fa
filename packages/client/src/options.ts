import { DEFAULTS, type Retention, type RetentionOptions, resolveRetention } from "@flotilla/core";
import type { RedisConnection } from "@flotilla/core/redis";
import type { MemoryStore } from "@flotilla/memory";
import { defaultMetrics, type FlotillaMetrics } from "@flotilla/metrics";

export interface ClientOptions {
  /** Redis URL, ioredis options or client, a Redis Cluster (`{ cluster: ["host:port", …] }` or an ioredis Cluster). @default the cluster REDIS_CLUSTER_NODES names, else process.env.REDIS_URL ?? "redis://127.0.0.1:6379" */
  redis?: RedisConnection;
  /** Key prefix shared with the workers. @default "flotilla" */
  prefix?: string;
  /** How long records, events and dead letters are kept. @default DEFAULT_RETENTION */
  retention?: RetentionOptions;
  /** Largest accepted payload (agent + input) as JSON. @default 1_048_576 */
  maxPayloadBytes?: number;
  /**
   * Deepest nesting of objects and arrays accepted in a submit's agent, input and metadata; deeper
   * is a ValidationError (nothing is written). Workers check what they read against their own. @default 128
   */
  maxJsonDepth?: number;
  /** How long to wait for Redis to answer before a ConnectionError. @default 5_000 */
  connectTimeoutMs?: number;
  /** Memory stores by name, for `conversations`; `redis` (this client's connection) is built in. @default { redis } */
  memory?: Record<string, MemoryStore>;
  /** Where submit counts go (OpenTelemetry, and readable with `snapshot()`). @default defaultMetrics() */
  metrics?: FlotillaMetrics;
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
}

/** The one place the client's defaults are applied. */
export function resolveClientOptions(options: ClientOptions): ResolvedClientOptions {
  return {
    redis: options.redis,
    prefix: options.prefix ?? DEFAULTS.prefix,
    retention: resolveRetention(options.retention),
    maxPayloadBytes: options.maxPayloadBytes ?? DEFAULTS.maxPayloadBytes,
    maxJsonDepth: options.maxJsonDepth ?? DEFAULTS.maxJsonDepth,
    connectTimeoutMs: options.connectTimeoutMs ?? DEFAULTS.clientConnectTimeoutMs,
    memory: options.memory,
    metrics: options.metrics ?? defaultMetrics(),
  };
}
