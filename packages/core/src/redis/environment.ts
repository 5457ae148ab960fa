// The one rule every entry point (Worker, FlotillaClient, distributed(), Bus, the CLI, flotilla-worker)
// follows for the settings a deployment gives through the environment: an option given in code (or a
// flag) wins, else its environment variable, else the default. A variable set empty or blank counts as
// unset, as most deployment tools mean it. Every value is checked where it is read: a bad one is a
// ValidationError naming the variable, not a connection that fails later for a reason that hides it.
import { DEFAULTS } from "../defaults.ts";
import { ValidationError } from "../errors.ts";
import { KeyPrefixSchema, RedisUrlSchema } from "../schemas.ts";
import { CLUSTER_NODES_ENV, isClusterConnection, parseNodeList } from "./cluster.ts";

/** The environment a process reads its settings from (`process.env`, or what a CLI was given). */
export type Environment = Readonly<Record<string, string | undefined>>;

/** The environment variables Flotilla reads, by setting. */
export const ENV = {
  /** Where Redis is: `redis://`, `rediss://`, a unix socket path or `host:port`. */
  redisUrl: "REDIS_URL",
  /** A Redis Cluster's seed nodes, `host:port,host:port`: used instead of REDIS_URL when set. */
  redisClusterNodes: CLUSTER_NODES_ENV,
  /** The key prefix clients and workers share. */
  prefix: "FLOTILLA_PREFIX",
  /** The secret (or comma-separated secrets, current first) bus webhooks are signed with. */
  webhookSecret: "FLOTILLA_WEBHOOK_SECRET",
} as const;

/** A variable's value, trimmed; undefined when unset, empty or blank. */
export function readEnv(name: string, env: Environment = process.env): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

/**
 * Checks a Redis URL the way every entry point does: `redis://`, `rediss://`, a unix socket path or
 * `host:port`. Another scheme (`http://…`) is a ValidationError naming `source` (the option or the
 * variable it came from), where ioredis would read it as a socket path and fail with ENOENT.
 */
export function checkRedisUrl(url: string, source: string): string {
  const parsed = RedisUrlSchema.safeParse(url);
  if (!parsed.success) throw ValidationError.of("Redis connection", source, `${parsed.error.issues[0]?.message ?? "invalid"} (got "${redactUrl(url)}")`);
  return parsed.data;
}

/** A URL with its password hidden, for messages. */
function redactUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*:)[^@/]*@/i, "$1***@");
}

/** A Redis Cluster's seed nodes, as `{ cluster }` takes them. */
type ClusterNodes = { cluster: Array<{ host: string; port: number }> };

/** Where a connection goes when none is given, and which setting said so (for messages). */
export interface RedisFromEnvironment {
  connection: string | ClusterNodes;
  /** `REDIS_CLUSTER_NODES`, `REDIS_URL` or `the default`. */
  source: string;
}

/** The Redis a process reaches when no connection is given: REDIS_CLUSTER_NODES's cluster, else REDIS_URL, else redis://127.0.0.1:6379. */
export function redisFromEnv(env: Environment = process.env): RedisFromEnvironment {
  const nodes = readEnv(ENV.redisClusterNodes, env);
  if (nodes) return { connection: { cluster: parseNodeList(nodes) }, source: ENV.redisClusterNodes };
  const url = readEnv(ENV.redisUrl, env);
  if (url) return { connection: checkRedisUrl(url, ENV.redisUrl), source: ENV.redisUrl };
  return { connection: DEFAULTS.redisUrl, source: "the default" };
}

/**
 * Checks a connection given in code: a URL (alone or as `{ url }` with options) as `checkRedisUrl`
 * does, under the option's name. Clients, clusters and other options pass as they are.
 */
export function checkRedisConnection(conn: unknown, option = "redis"): void {
  if (typeof conn === "string") checkRedisUrl(conn, option);
  else if (typeof conn === "object" && conn !== null && !isClusterConnection(conn) && typeof (conn as { url?: unknown }).url === "string") {
    checkRedisUrl((conn as { url: string }).url, `${option}.url`);
  }
}

/** The key prefix: the option, else FLOTILLA_PREFIX, else "flotilla"; a ValidationError names the one at fault. */
export function resolvePrefix(option: string | undefined, env: Environment = process.env): string {
  const [value, source] = option !== undefined ? [option, "prefix"] : [readEnv(ENV.prefix, env), ENV.prefix];
  if (value === undefined) return DEFAULTS.prefix;
  const parsed = KeyPrefixSchema.safeParse(value);
  if (!parsed.success) throw ValidationError.of("key prefix", source, parsed.error.issues[0]?.message ?? "invalid");
  return parsed.data;
}
