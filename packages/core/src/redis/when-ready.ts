import type { ChainableCommander, Redis } from "ioredis";

/**
 * Sends one command as a pipeline of its own, so it is written only once the connection is ready,
 * and returns its reply (or throws its error). Why: ioredis writes a command Redis accepts while
 * loading (INFO, TIME, SSUBSCRIBE…) at once even before its ready check has finished, and a
 * connection lost in that moment forgets it — its promise never settles (the next connection starts
 * with an empty command queue). A worker probing Redis with INFO waited for ever that way after a
 * burst of dropped connections, and stopped taking work. A pipeline waits in the offline queue until
 * the connection is ready.
 */
export async function answeredWhenReady<T>(redis: Pick<Redis, "pipeline">, command: (pipeline: ChainableCommander) => ChainableCommander): Promise<T> {
  const [[err, reply] = []] = (await command(redis.pipeline()).exec()) ?? [];
  if (err) throw err;
  return reply as T;
}
