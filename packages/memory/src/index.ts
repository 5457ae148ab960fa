export { PostgresMemoryStore, type PostgresMemoryOptions } from "./postgres-store.ts";
export { RedisMemoryStore, type RedisMemoryOptions } from "./redis-store.ts";
export { SqliteMemoryStore } from "./sqlite-store.ts";
export { checkConversationId, latestAttempts, loadHistory, type MemoryEntry, MemoryEntrySchema, type MemoryStore } from "./store.ts";
export { type MemoryRef, MemoryRefSchema, MemoryStores } from "./stores.ts";
