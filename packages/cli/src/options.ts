import { DEFAULTS } from "@flotilla/core";
import { clusterNodesFromEnv, ENV as FLOTILLA_ENV, readEnv } from "@flotilla/core/redis";

/** The environment variables the command reads: Flotilla's own (read by core's one rule, as every entry point reads them), and NO_COLOR. */
export const ENV = {
  redis: FLOTILLA_ENV.redisUrl,
  /** Seed nodes of a Redis Cluster (`host:port,…`): used, as the client does, when no `--redis` is given. */
  cluster: FLOTILLA_ENV.redisClusterNodes,
  prefix: FLOTILLA_ENV.prefix,
  noColor: "NO_COLOR",
} as const;

/** The options every command takes, as commander parses them (before their defaults). */
export interface GlobalFlags {
  redis?: string;
  prefix?: string;
  json?: boolean;
}

/** The options every command takes, defaults applied. */
export interface GlobalOptions {
  /**
   * The Redis the fleet runs on, as a URL. Undefined when no `--redis` is given and
   * REDIS_CLUSTER_NODES names a Redis Cluster: the client then connects to that cluster (as it does).
   * @default process.env.REDIS_URL ?? "redis://127.0.0.1:6379"
   */
  redis: string | undefined;
  /** The cluster's seed nodes when `redis` is undefined: read from the environment the command was given (not only the process's). */
  cluster: Array<{ host: string; port: number }> | undefined;
  /** Where the Redis came from, for error messages (never with its password). */
  redisLabel: string;
  /**
   * The key prefix the fleet's workers and clients share.
   * @default process.env.FLOTILLA_PREFIX ?? "flotilla"
   */
  prefix: string;
  /**
   * Machine output: one JSON document per line on stdout, in a shape that does not change with the
   * terminal (no colour, no table). Errors stay one line on stderr.
   * @default false
   */
  json: boolean;
}

/**
 * Applies the defaults: a flag, else its environment variable, else the built-in default (the rule of
 * every Flotilla entry point; an empty variable counts as unset). Values are checked by the client.
 */
export function resolveGlobals(flags: GlobalFlags, env: Readonly<Record<string, string | undefined>>): GlobalOptions {
  const cluster = readEnv(ENV.cluster, env);
  const redis = flags.redis ?? (cluster ? undefined : (readEnv(ENV.redis, env) ?? DEFAULTS.redisUrl));
  return {
    redis,
    cluster: redis === undefined ? clusterNodesFromEnv({ [ENV.cluster]: cluster }) : undefined,
    redisLabel: redis === undefined ? `the Redis Cluster ${ENV.cluster} names (${cluster})` : redactUrl(redis),
    prefix: flags.prefix ?? readEnv(ENV.prefix, env) ?? DEFAULTS.prefix,
    json: flags.json === true,
  };
}

/** A Redis URL with its password (and user) hidden. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    return url;
  }
}
