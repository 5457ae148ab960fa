// @flotilla/testing: test Flotilla agents and workers against a real Redis.
export { aclRefusals } from "./acl-log.ts";
export { echo, scripted } from "./agents.ts";
export { collect } from "./collect.ts";
export {
  onCluster,
  redisFromEnv,
  redisUrl,
  shardSubscribers,
  TEST_CLUSTER_ENV,
  testClusterNodes,
  testConnection,
  testRedis,
  testRedisEnv,
} from "./connection.ts";
export { TestServerError } from "./errors.ts";
export { type ExitRun, exitSteps, exitSummary, HELD_MARK, recordHandles, reportIfHeld, reportIfSlow, runToExit } from "./exit-probe.ts";
export { type FaultProxy, startFaultProxy } from "./fault-proxy.ts";
export { type OpenAIReply, type OpenAIServer, type RecordedRequest, startOpenAIServer } from "./openai-server.ts";
export { downRedisEnv, freePort, startHungRedis } from "./ports.ts";
export { testPrefix } from "./prefix.ts";
export { keysUnder, purgePrefix, scanPrefix } from "./purge.ts";
export { type LoggedLine, recordingLogger } from "./recording-logger.ts";
export { type ClusterNodeAddress, type RedisClusterOptions, startRedisCluster, type TestRedisCluster } from "./redis-cluster.ts";
export { type RedisSentinelOptions, type SentinelAddress, startRedisSentinel, type TestRedisSentinel } from "./redis-sentinel.ts";
export { type RedisServerOptions, startRedisServer, type TestRedisServer } from "./redis-server.ts";
export { type RedisTlsServerOptions, startRedisTlsServer, type TestRedisTlsServer } from "./redis-tls.ts";
export { sized, type TestSize, testSize } from "./size.ts";
export {
  NO_TEMPORAL_NOTE,
  startTemporalServer,
  TEMPORAL_SETUP_COMMAND,
  TEMPORAL_VERSION,
  type TemporalServer,
  temporalBinary,
} from "./temporal-server.ts";
export { createTestEnv, type StopWorkersOptions, TEST_WORKER_DEFAULTS, type TestEnv, type TestEnvOptions } from "./test-env.ts";
export { makeTlsCertificates, type TlsCertificates } from "./tls-certificates.ts";
export { type WaitForOptions, waitFor } from "./wait-for.ts";
