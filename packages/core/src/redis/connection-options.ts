import { DEFAULTS } from "../defaults.ts";
import { ValidationError } from "../errors.ts";
import type { RedisConnection } from "./connection.ts";
import { checkRedisConnection, type Environment, redisFromEnv, resolvePrefix } from "./environment.ts";

/**
 * How an application-side object reaches the fleet: what `FlotillaClient` and `Bus` take alike (and
 * read the same way: an option given wins, else its environment variable, else the default).
 */
export interface ConnectionOptions {
  /**
   * Redis URL, ioredis options or client, a Redis Cluster (`{ cluster: ["host:port", …] }` or an ioredis Cluster).
   * @default the cluster REDIS_CLUSTER_NODES names, else REDIS_URL, else "redis://127.0.0.1:6379"
   */
  redis?: RedisConnection;
  /** Key prefix shared with the workers. @default FLOTILLA_PREFIX, else "flotilla" */
  prefix?: string;
  /** How long to wait for Redis to answer before a ConnectionError. @default 5_000 */
  connectTimeoutMs?: number;
}

export interface ResolvedConnectionOptions {
  /** Undefined: opened from the environment (see `openRedis`). */
  redis: RedisConnection | undefined;
  prefix: string;
  connectTimeoutMs: number;
}

/** The names `ConnectionOptions` has, for strict options objects that extend it. */
export const CONNECTION_OPTION_KEYS = ["redis", "prefix", "connectTimeoutMs"] as const;

/** Applies the rule and the defaults to connection options; a bad value is a ValidationError naming the option or the variable. */
export function resolveConnectionOptions(options: ConnectionOptions, env: Environment = process.env): ResolvedConnectionOptions {
  // Checked now, not at the first command: REDIS_URL=http://… is a ValidationError from the constructor.
  if (options.redis !== undefined) checkRedisConnection(options.redis);
  else redisFromEnv(env);
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULTS.clientConnectTimeoutMs;
  if (!Number.isInteger(connectTimeoutMs) || connectTimeoutMs < 1)
    throw ValidationError.of("connection options", "connectTimeoutMs", "must be a positive integer");
  return { redis: options.redis, prefix: resolvePrefix(options.prefix, env), connectTimeoutMs };
}
