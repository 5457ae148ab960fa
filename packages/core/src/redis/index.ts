// @flotilla/core/redis: everything of core that talks to Redis — connections with their policies,
// the Lua script runner and the shared subscriber connection.

export { redisTime } from "./clock.ts";
export {
  asCluster,
  CLUSTER_NODES_ENV,
  type ClusterConnection,
  clusterNodesFromEnv,
  everyMaster,
  isCluster,
  isClusterConnection,
  keySlot,
  parseNodeList,
  pipelineBySlot,
} from "./cluster.ts";
export {
  type ConnectionPolicy,
  type ConnectionRole,
  closeRedis,
  describeRedis,
  disconnectRedis,
  isConnectionFailure,
  type OwnedRedis,
  openRedis,
  type RedisClientLike,
  type RedisConnection,
  type RedisUrlOptions,
  translateRedisError,
  whenReady,
  withRedis,
} from "./connection.ts";
export {
  CONNECTION_OPTION_KEYS,
  type ConnectionOptions,
  type ResolvedConnectionOptions,
  resolveConnectionOptions,
} from "./connection-options.ts";
export {
  checkRedisConnection,
  checkRedisUrl,
  ENV,
  type Environment,
  type RedisFromEnvironment,
  readEnv,
  redisFromEnv,
  resolvePrefix,
} from "./environment.ts";
export { LuaScript, type ScriptSource } from "./lua-script.ts";
export { formatBytes, isFull, parseMemoryInfo, type RedisMemory, readRedisMemory } from "./memory.ts";
export { REPLICA_WAITER_CONNECTIONS, ReplicaWaiter } from "./replicas.ts";
export { isSentinelConnection, type SentinelConnection } from "./sentinel.ts";
export { type MessageListener, SubscriberHub, type SubscriberHubOptions, type Unsubscribe } from "./subscriber-hub.ts";
