import type { Broker } from "@flotilla/broker";
import type { Keys, Retention } from "@flotilla/core";
import type { SubscriberHub } from "@flotilla/core/redis";
import type { StatusFeed } from "@flotilla/events";
import type { TaskStore } from "@flotilla/store";
import type { Redis } from "ioredis";

/** What a client shares with the handles and sub-clients it makes. */
export interface ClientContext {
  redis: Redis;
  keys: Keys;
  retention: Retention;
  store: TaskStore;
  broker: Broker;
  /** The shared subscriber connection, opened on first use. */
  hub(): Promise<SubscriberHub>;
  /** Status events of awaited tasks, one subscription per queue, opened on first use. */
  statusFeed(): Promise<StatusFeed>;
}
