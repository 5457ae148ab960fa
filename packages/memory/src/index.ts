export { type PgPool, type PgPoolConfig, type PostgresMemoryOptions, PostgresMemoryStore } from "./postgres-store.ts";
export { type RedisMemoryOptions, RedisMemoryStore } from "./redis-store.ts";
export { SqliteMemoryStore } from "./sqlite-store.ts";
export { checkConversationId, latestAttempts, loadHistory, type MemoryEntry, MemoryEntrySchema, type MemoryStore } from "./store.ts";
export { type MemoryRef, MemoryRefSchema, MemoryStores } from "./stores.ts";
