import type { Message } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { checkConversationId, loadHistory, type MemoryStores } from "@flotilla/memory";
import type { ClientContext } from "./context.ts";

/** A conversation kept by a memory store, as the client reads it. */
export interface Conversation {
  /** Its messages, oldest first (a retried task's earlier attempts left out). */
  messages(): Promise<Message[]>;
  /** Forgets it. */
  clear(): Promise<void>;
}

/** `client.conversations`: the conversations agents remember across tasks (tasks name one in `metadata.memory`). */
export class ConversationsClient {
  private readonly ctx: ClientContext;
  private readonly stores: MemoryStores;

  constructor(ctx: ClientContext, stores: MemoryStores) {
    this.ctx = ctx;
    this.stores = stores;
  }

  /** `store` names a store given in the client's `memory` option, or `redis` (the default) for this client's Redis. */
  get(conversationId: string, store = "redis"): Conversation {
    const id = checkConversationId(conversationId);
    const memory = this.stores.get(store);
    const redis = this.ctx.redis;
    return {
      messages: () => withRedis(redis, () => loadHistory(memory, id)),
      clear: () => withRedis(redis, () => memory.clear(id)),
    };
  }
}
