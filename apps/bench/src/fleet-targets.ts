import type { RedisConnection } from "@flotilla/core/redis";
import { startRedisCluster } from "@flotilla/testing";
import type { ConnectionOptions } from "bullmq";
import { Cluster, Redis } from "ioredis";
import { bullConnection, newAdmin } from "./harness.ts";

/** Where the fleet scenario drains: the harness's single Redis, or a cluster of its own. */
export interface FleetTarget {
  kind: "single" | "cluster";
  /** One plain connection per master ("host:port"), for its INFO. */
  masters: Array<{ node: string; admin: Redis }>;
  /** A connection that routes each key to its node (a Cluster on a cluster): polls and clean-up. */
  router: Redis;
  /** What a worker process's environment needs to reach it (both variables set, so none is inherited). */
  env: { REDIS_URL: string; REDIS_CLUSTER_NODES: string };
  /** FlotillaClient's `redis`. */
  flotilla: RedisConnection;
  /** The connection of the BullMQ queues the scenario submits to and polls. */
  bullmq: ConnectionOptions;
  /** The master that serves a key's slot ("host:port"), and the slot. */
  placement(key: string): Promise<{ node: string; slot: number }>;
  /** Closes the connections; a cluster is stopped too. */
  close(): Promise<void>;
}

export function singleTarget(url: string): FleetTarget {
  const admin = newAdmin(url);
  const u = new URL(url);
  const node = `${u.hostname}:${u.port || 6379}`;
  return {
    kind: "single",
    masters: [{ node, admin }],
    router: admin,
    env: { REDIS_URL: url, REDIS_CLUSTER_NODES: "" },
    flotilla: url,
    bullmq: bullConnection(url),
    placement: async () => ({ node, slot: 0 }),
    close: async () => {
      admin.disconnect();
    },
  };
}

/**
 * Starts a cluster of `masters` masters without replicas (a benchmark measures the masters' work; a
 * replica would only add its replication stream) and connects to it. Stopped by `close()`, and by
 * @flotilla/testing when the process exits first.
 */
export async function clusterTarget(masters: number): Promise<FleetTarget> {
  const cluster = await startRedisCluster({ masters, replicasPerMaster: 0 });
  const nodes = cluster.nodes.map((n) => `${n.host}:${n.port}`);
  const admins = cluster.nodes.map((n, i) => ({ node: nodes[i]!, admin: new Redis({ host: n.host, port: n.port, maxRetriesPerRequest: 3 }) }));
  const router = new Cluster(cluster.nodes, { enableAutoPipelining: true });
  const bullmq = new Cluster(cluster.nodes, { redisOptions: { maxRetriesPerRequest: null } });
  return {
    kind: "cluster",
    masters: admins,
    router: router as unknown as Redis,
    env: { REDIS_URL: "", REDIS_CLUSTER_NODES: cluster.nodeList },
    flotilla: { cluster: cluster.nodes },
    bullmq,
    async placement(key) {
      const slot = Number(await router.cluster("KEYSLOT", key));
      const owner = (await router.cluster("SLOTS")).find(([first, last]) => slot >= first && slot <= last)?.[2];
      return { node: owner ? `${owner[0]}:${owner[1]}` : "unserved", slot };
    },
    async close() {
      for (const { admin } of admins) admin.disconnect();
      router.disconnect();
      bullmq.disconnect();
      await cluster.stop();
    },
  };
}
