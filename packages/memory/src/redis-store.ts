import { createKeys, type Keys } from "@flotilla/core";
import type { Redis } from "ioredis";
import { asJson, checkConversationId, type MemoryEntry, type MemoryStore, parseEntry } from "./store.ts";

export interface RedisMemoryOptions {
  /** Key prefix shared with the fleet. @default "flotilla" */
  prefix?: string;
  /** A conversation expires this long after its last message; 0 keeps it. @default 2_592_000_000 (30 days) */
  ttlMs?: number;
  /** Entries kept per conversation (oldest trimmed). @default 10_000 */
  maxEntries?: number;
}

/** Conversations in Redis lists, one per conversation (`{prefix}:memory:{<id>}`). The default store. */
export class RedisMemoryStore implements MemoryStore {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly ttlMs: number;
  private readonly maxEntries: number;

  constructor(redis: Redis, options: RedisMemoryOptions = {}) {
    this.redis = redis;
    this.keys = createKeys(options.prefix);
    this.ttlMs = options.ttlMs ?? 2_592_000_000;
    this.maxEntries = options.maxEntries ?? 10_000;
  }

  async entries(conversationId: string): Promise<MemoryEntry[]> {
    const rows = await this.redis.lrange(this.keys.memory(checkConversationId(conversationId)), 0, -1);
    return rows.map((row) => parseEntry(JSON.parse(row), conversationId));
  }

  async append(conversationId: string, entries: readonly MemoryEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const key = this.keys.memory(checkConversationId(conversationId));
    const multi = this.redis
      .multi()
      .rpush(key, ...entries.map(asJson))
      .ltrim(key, -this.maxEntries, -1);
    if (this.ttlMs > 0) multi.pexpire(key, this.ttlMs);
    const replies = (await multi.exec()) ?? [];
    for (const [err] of replies) if (err) throw err;
  }

  async clear(conversationId: string): Promise<void> {
    await this.redis.del(this.keys.memory(checkConversationId(conversationId)));
  }
}
