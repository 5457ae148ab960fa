// How the worker app reaches Redis: a URL, a Redis Cluster's seed nodes or Sentinel, each
// optionally over TLS with a CA and a client certificate read from files.
import { readFileSync } from "node:fs";
import { DEFAULTS, RedisUrlSchema, ValidationError } from "@flotilla/core";
import { parseNodeList, type RedisConnection } from "@flotilla/core/redis";
import { z } from "zod";

/** `host:port,host:port` as addresses; the message of a bad part is parseNodeList's. */
const nodeList = () =>
  z
    .string()
    .optional()
    .transform((list, ctx) => {
      if (list === undefined) return undefined;
      try {
        return parseNodeList(list);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: err instanceof ValidationError ? (err.issues[0]?.message ?? err.message) : String(err) });
        return z.NEVER;
      }
    });

/** A PEM file's contents, read when the configuration is loaded: a missing file is a configuration error, not a failed TLS handshake later. */
const pemFile = () =>
  z
    .string()
    .optional()
    .transform((path, ctx) => {
      if (path === undefined) return undefined;
      try {
        return readFileSync(path);
      } catch (err) {
        ctx.addIssue({ code: "custom", message: `cannot read ${path}: ${(err as Error).message}` });
        return z.NEVER;
      }
    });

/** The Redis settings of the worker app's configuration. */
export const RedisConfigShape = {
  redis: RedisUrlSchema.default(DEFAULTS.redisUrl),
  redisCluster: nodeList(),
  redisSentinels: nodeList(),
  redisSentinelName: z.string().optional(),
  redisSentinelPassword: z.string().optional(),
  redisTlsCa: pemFile(),
  redisTlsCert: pemFile(),
  redisTlsKey: pemFile(),
};

type RedisConfig = z.output<z.ZodObject<typeof RedisConfigShape>>;

/** What the settings cannot say together. */
export function checkRedisConfig(config: RedisConfig, ctx: z.RefinementCtx): void {
  const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
  if (config.redisCluster && config.redisSentinels) issue("redisSentinels", "give a Redis Cluster (--redis-cluster) or Sentinel (--redis-sentinels), not both");
  if (config.redisSentinels && !config.redisSentinelName) issue("redisSentinelName", "name the master the sentinels monitor (--redis-sentinel-name)");
  if (!config.redisSentinels && config.redisSentinelName) issue("redisSentinels", "--redis-sentinel-name needs the sentinels (--redis-sentinels)");
  if (Boolean(config.redisTlsCert) !== Boolean(config.redisTlsKey))
    issue("redisTlsCert", "give the client certificate and its key together (--redis-tls-cert, --redis-tls-key)");
}

/**
 * The Redis the configuration names. TLS options (a CA, a client certificate) turn TLS on, for the
 * URL (as `rediss://` does), every node of a cluster, and Sentinel's master and sentinels alike.
 * Through Sentinel the URL gives the master's credentials and database; its host is not used.
 */
export function redisConnectionOf(config: RedisConfig): RedisConnection {
  const tls =
    config.redisTlsCa || config.redisTlsCert
      ? {
          ...(config.redisTlsCa && { ca: config.redisTlsCa }),
          ...(config.redisTlsCert && { cert: config.redisTlsCert, key: config.redisTlsKey }),
        }
      : undefined;
  if (config.redisCluster) return { cluster: config.redisCluster, ...(tls && { options: { redisOptions: { tls } } }) };
  if (config.redisSentinels) {
    return {
      url: config.redis,
      sentinels: config.redisSentinels,
      name: config.redisSentinelName,
      ...(config.redisSentinelPassword && { sentinelPassword: config.redisSentinelPassword }),
      ...(tls && { tls, sentinelTLS: tls }),
    };
  }
  return tls ? { url: config.redis, tls } : config.redis;
}
