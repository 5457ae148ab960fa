import { ErrorCodes, FlotillaError } from "@flotilla/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import { RedisMemoryStore } from "./redis-store.ts";
import type { MemoryStore } from "./store.ts";

/** `metadata.memory` of a task: the conversation it continues, and the store that keeps it. */
export const MemoryRefSchema = z.object({ store: z.string().min(1).default("redis"), conversationId: z.string().min(1).max(200) }).strict();
export type MemoryRef = z.output<typeof MemoryRefSchema>;

/**
 * Memory stores by name, as workers, clients and Temporal activities look them up: the ones given,
 * and `redis` built in on the process's own connection (made on first use). An unknown name is an
 * UNKNOWN_MEMORY error.
 */
export class MemoryStores {
  private readonly named: Readonly<Record<string, MemoryStore>>;
  private readonly redis: () => Redis;
  private readonly prefix: string;
  private readonly owner: string;
  private builtIn: RedisMemoryStore | undefined;

  /** @param owner who is asking, for the error message ("worker", "client") */
  constructor(named: Readonly<Record<string, MemoryStore>> | undefined, redis: () => Redis, prefix: string, owner = "worker") {
    this.named = { ...named };
    this.redis = redis;
    this.prefix = prefix;
    this.owner = owner;
  }

  get(name: string): MemoryStore {
    if (Object.hasOwn(this.named, name)) return this.named[name]!;
    if (name === "redis") {
      this.builtIn ??= new RedisMemoryStore(this.redis(), { prefix: this.prefix });
      return this.builtIn;
    }
    throw new FlotillaError(ErrorCodes.UNKNOWN_MEMORY, `this ${this.owner} has no memory store "${name}"`);
  }
}
