import type { ChainableCommander, Redis } from "ioredis";

/**
 * Sends commands as a pipeline of their own, so they are written only once the connection is
 * ready. Why: ioredis writes a command Redis accepts while loading (INFO, TIME, SSUBSCRIBE…) at once
 * even before its ready check has finished, and a connection lost in that moment forgets it — its
 * promise never settles (the next connection starts with an empty command queue). A worker probing
 * Redis with INFO waited for ever that way after a burst of dropped connections, and stopped taking
 * work. A pipeline waits in the offline queue until the connection is ready.
 */
export function answeredWhenReady(redis: Pick<Redis, "pipeline">, queue: (pipeline: ChainableCommander) => ChainableCommander) {
  return queue(redis.pipeline()).exec();
}
