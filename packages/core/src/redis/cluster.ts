// Redis Cluster: how a connection to one is asked for, and the few things that differ from a single
// Redis — the commands that must reach every master (INFO, SCAN) and which slot a key lives in.
import type { ChainableCommander, Cluster, ClusterNode, ClusterOptions, Redis } from "ioredis";
import { ValidationError } from "../errors.ts";

/** A Redis Cluster to connect to: its seed nodes, and ioredis cluster options. */
export interface ClusterConnection {
  /** Seed nodes (any of the cluster's nodes; the rest are learnt): `"host:port"` or `{ host, port }`. */
  cluster: ReadonlyArray<string | { host: string; port: number }>;
  /**
   * ioredis ClusterOptions; `redisOptions` apply to every node's connection (`username`, `password`,
   * `tls`). @default {}
   */
  options?: ClusterOptions;
}

/** The environment variable a process reads its cluster's seed nodes from: `host:port,host:port`. */
export const CLUSTER_NODES_ENV = "REDIS_CLUSTER_NODES";

/** True for `{ cluster: [...] }`. */
export function isClusterConnection(conn: unknown): conn is ClusterConnection {
  return typeof conn === "object" && conn !== null && Array.isArray((conn as { cluster?: unknown }).cluster);
}

/** The connection as an ioredis Cluster when it is one (ours or a lent one), else undefined. */
export function asCluster(redis: unknown): Cluster | undefined {
  return typeof redis === "object" && redis !== null && (redis as { isCluster?: unknown }).isCluster === true ? (redis as Cluster) : undefined;
}

/** True for a connection to a Redis Cluster. */
export const isCluster = (redis: unknown): boolean => asCluster(redis) !== undefined;

/** `"h1:p1,h2:p2"` as seed nodes; a ValidationError names the bad part. */
export function parseNodeList(list: string): Array<{ host: string; port: number }> {
  const nodes = list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map((part) => {
      const m = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(part);
      const port = Number(m?.[2]);
      if (!m || port < 1 || port > 65535) throw ValidationError.of("cluster nodes", CLUSTER_NODES_ENV, `"${part}" is not host:port`);
      return { host: m[1]!, port };
    });
  if (nodes.length === 0) throw ValidationError.of("cluster nodes", CLUSTER_NODES_ENV, "names no node");
  return nodes;
}

/** The seed nodes REDIS_CLUSTER_NODES names, or undefined when it is unset or empty. */
export function clusterNodesFromEnv(env: NodeJS.ProcessEnv = process.env): Array<{ host: string; port: number }> | undefined {
  const list = env[CLUSTER_NODES_ENV]?.trim();
  return list ? parseNodeList(list) : undefined;
}

/** Seed nodes as ioredis takes them. */
export function seedNodes(conn: ClusterConnection): ClusterNode[] {
  return conn.cluster.map((n) => (typeof n === "string" ? parseNodeList(n)[0]! : { host: n.host, port: n.port }));
}

/**
 * The connections to ask when a question concerns the whole data set: every master of a cluster
 * (each holds its own slots), or the one Redis. A cluster not connected yet knows no master: it is
 * asked itself, and routes the command to a node once it is.
 */
export function everyMaster(redis: Redis): Redis[] {
  const masters = asCluster(redis)?.nodes("master");
  return masters?.length ? masters : [redis];
}

// CRC16-XMODEM, the checksum Redis Cluster takes of a key (or its hash tag) modulo 16384.
const CRC16_TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    table[i] = crc & 0xffff;
  }
  return table;
})();

/**
 * The cluster slot of a key: of its hash tag (the text between the first `{` and the next `}`,
 * when not empty), else of the whole key — as Redis computes it (`CLUSTER KEYSLOT`).
 */
export function keySlot(key: string): number {
  const open = key.indexOf("{");
  if (open !== -1) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key, "utf8")) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc % 16384;
}

/**
 * Runs one command per key in pipelines and returns the replies in the keys' order, as
 * `pipeline.exec()` does. On a single Redis that is one pipeline; on a cluster, one per slot, sent
 * at once (a Cluster refuses a pipeline whose keys lie in several slots): for reads across queues,
 * such as records of tasks of different queues.
 */
export async function pipelineBySlot(
  redis: Redis,
  keys: readonly string[],
  add: (pipeline: ChainableCommander, key: string) => void,
): Promise<Array<[error: Error | null, result: unknown]>> {
  const exec = async (indexes: readonly number[]) => {
    const pipeline = redis.pipeline();
    for (const i of indexes) add(pipeline, keys[i]!);
    return (await pipeline.exec()) ?? [];
  };
  if (!isCluster(redis)) return exec(keys.map((_, i) => i));
  const bySlot = [...Map.groupBy(keys.keys(), (i) => keySlot(keys[i]!)).values()];
  const out = new Array<[Error | null, unknown]>(keys.length);
  await Promise.all(
    bySlot.map(async (indexes) => {
      const replies = await exec(indexes);
      indexes.forEach((i, j) => {
        out[i] = replies[j] ?? [new Error("no reply"), null];
      });
    }),
  );
  return out;
}
