// @flotilla/core: the pure part — schemas, errors, keys, ids and defaults, with no I/O and no Node
// built-ins, so Temporal workflow code may import it. Connections, the Lua script runner and the
// subscriber hub are in "@flotilla/core/redis".
export * from "./defaults.ts";
export * from "./errors.ts";
export { newId, parseJsonOr, sleep } from "./ids.ts";
export { CONSUMER_GROUP, createKeys, type Keys, STATS_BUCKET_MS, splitTaskId, type TaskRef, taskIdOf } from "./keys.ts";
export { type Logger, type LogFields, silentLogger } from "./logger.ts";
export * from "./schemas.ts";
