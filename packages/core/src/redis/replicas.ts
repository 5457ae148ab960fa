// Waiting for replicas to have a write (Redis WAIT): replication is asynchronous, so a write a
// master acknowledged can be lost when a replica is promoted before it had it. WAIT counts the
// replicas that acknowledged everything this connection wrote so far; it must go on the connection
// that made the write, so on a cluster to the node that serves the written key's slot.
import type { Cluster, Redis } from "ioredis";
import { asCluster, keySlot } from "./cluster.ts";

/**
 * How many replicas have every write this connection made to `key`'s node, waiting up to
 * `timeoutMs` for `replicas` of them (WAIT). On a cluster, asked of the connection to the master
 * that serves `key` (the one the write went through).
 */
export async function waitForReplicas(redis: Redis | Cluster, key: string, replicas: number, timeoutMs: number): Promise<number> {
  const cluster = asCluster(redis);
  if (!cluster) return (redis as Redis).wait(replicas, timeoutMs);
  const nodeKey = cluster.slots[keySlot(key)]?.[0];
  const node = cluster.nodes("master").find((n) => `${n.options.host}:${n.options.port}` === nodeKey);
  // Slots not known (yet): no node to ask, so nothing is known to be replicated.
  if (!node) return 0;
  return node.wait(replicas, timeoutMs);
}
