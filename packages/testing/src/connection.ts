import { CLUSTER_NODES_ENV, everyMaster, isCluster, parseNodeList, type RedisConnection } from "@flotilla/core/redis";
import { Cluster, Redis } from "ioredis";

/**
 * Set (by the suite's global setup under `FLOTILLA_TEST_REDIS=cluster`) to the seed nodes of the
 * Redis Cluster the tests run against; unset, they run against REDIS_URL.
 */
export const TEST_CLUSTER_ENV = "FLOTILLA_TEST_REDIS_CLUSTER";

/** The Redis tests run against: REDIS_URL, else the local default. (On a cluster run: one of its nodes.) */
export const redisUrl = (): string => process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** The seed nodes of the cluster the suite runs against, or undefined on a single Redis. */
export const testClusterNodes = (): string | undefined => process.env[TEST_CLUSTER_ENV] || undefined;

/**
 * True on a cluster run. Tests of one Redis connection's own behaviour (a fault proxy in front of a
 * single server, a lent ioredis 5 client) skip there: `describe.skipIf(onCluster())(…)`.
 */
export const onCluster = (): boolean => testClusterNodes() !== undefined;

/**
 * What clients and workers under test connect with: the suite's cluster (`{ cluster: [...] }`) on a
 * cluster run, else `redisUrl()`.
 */
export function testConnection(): RedisConnection {
  const nodes = testClusterNodes();
  return nodes ? { cluster: parseNodeList(nodes) } : redisUrl();
}

/**
 * The environment a spawned worker app (or any process reading Redis as it does) needs to reach
 * the suite's Redis: REDIS_URL, and on a cluster run REDIS_CLUSTER_NODES, which the app prefers.
 */
export function testRedisEnv(): Record<string, string> {
  const nodes = testClusterNodes();
  return nodes ? { REDIS_URL: redisUrl(), [CLUSTER_NODES_ENV]: nodes } : { REDIS_URL: redisUrl() };
}

/**
 * A plain ioredis connection for a test's own reads and writes (assertions, corrupting records):
 * to `url` when given, else to the suite's Redis — on a cluster run an ioredis Cluster, typed as
 * Redis like the connections Flotilla opens (every key a test names is under one slot per call).
 * It connects on its first command, so an unused one costs nothing; `quit()` it when done.
 */
export function testRedis(url?: string): Redis {
  const nodes = url === undefined ? testClusterNodes() : undefined;
  return nodes ? plainCluster(nodes, true) : new Redis(url ?? redisUrl(), { maxRetriesPerRequest: 3, lazyConnect: true });
}

/** A Cluster of `nodes` (`host:port,…`) for a test's own commands, typed as Redis as Flotilla's are. */
const plainCluster = (nodes: string, lazyConnect: boolean): Redis =>
  new Cluster(parseNodeList(nodes), { lazyConnect, redisOptions: { maxRetriesPerRequest: 3 } }) as unknown as Redis;

/**
 * The Redis a process's environment names, read as the worker app reads it (REDIS_CLUSTER_NODES,
 * else REDIS_URL): for fixtures that run inside spawned processes.
 */
export function redisFromEnv(env: NodeJS.ProcessEnv = process.env): Redis {
  const nodes = env[CLUSTER_NODES_ENV];
  return nodes ? plainCluster(nodes, false) : new Redis(env.REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 3 });
}

/**
 * How many connections subscribe to a sharded channel (SHARDNUMSUB), asked of every master on a
 * cluster run: only the node serving the channel's slot knows its subscribers.
 */
export async function shardSubscribers(redis: Redis, channel: string): Promise<number> {
  if (isCluster(redis) && redis.status !== "ready") await redis.ping();
  const counts = await Promise.all(everyMaster(redis).map(async (node) => Number(((await node.pubsub("SHARDNUMSUB", channel)) as [string, number])[1])));
  return counts.reduce((a, b) => a + b, 0);
}
