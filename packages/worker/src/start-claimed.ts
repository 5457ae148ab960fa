import { type Broker, parseEntry, type RawEntry } from "@flotilla/broker";
import type { Logger, Priority } from "@flotilla/core";
import type { StartReply, TaskStore } from "@flotilla/store";
import type { RedisLink } from "./redis-link.ts";

/** What starting claimed entries needs of the worker. */
export interface StartDeps {
  store: TaskStore;
  broker: Broker;
  /**
   * Takes up a claimed entry (runs its task, or dead-letters it); `leaseFrom`: when the request that
   * claimed it was sent (monotonic ms).
   */
  dispatch: (queue: string, reply: StartReply, reclaimed: boolean, leaseFrom: number) => void;
  log: Logger;
  onError: (err: unknown) => void;
  link: Pick<RedisLink, "observe">;
}

type EntryRef = { priority: Priority; entryId: string; name: string };

/**
 * Starts the tasks of entries `workerId` holds, one script call per queue; malformed entries go to
 * dispatch to be dead-lettered. At most `free` start: a blocking read returns up to COUNT entries
 * from each lane holding some when it arrives (tasks landed in several lanes between the claim that
 * found none and the read), so it can bring more than the free slots. The first `free` well-formed
 * ones (lanes in priority order) start, the rest go back to their lanes unread (`broker.release`),
 * so a worker never runs more than its concurrency. Entries whose giving back fails stay pending
 * here and are reclaimed once their lease lapses, as after a lost connection.
 * `leaseFrom`: when the request that claimed them was sent (monotonic ms).
 */
export async function startClaimed(
  deps: StartDeps,
  workerId: string,
  entries: readonly RawEntry[],
  options: { reclaimed: boolean; leaseFrom: number; free?: number },
): Promise<void> {
  const { reclaimed, leaseFrom } = options;
  const toStart = new Map<string, EntryRef[]>();
  const toRelease = new Map<string, EntryRef[]>();
  let free = options.free ?? Number.POSITIVE_INFINITY;
  for (const raw of entries) {
    const entry = parseEntry(raw);
    if (!entry.ok) {
      deps.dispatch(raw.queue, { kind: "malformed", priority: raw.priority, entryId: raw.entryId, fields: raw.fields }, reclaimed, leaseFrom);
      continue;
    }
    const into = free-- > 0 ? toStart : toRelease;
    into.set(entry.queue, [...(into.get(entry.queue) ?? []), { priority: entry.priority, entryId: entry.entryId, name: entry.name }]);
  }
  for (const [queue, list] of toRelease) {
    try {
      await deps.broker.release(queue, workerId, list);
    } catch (err) {
      // The others still start (or meet the same trouble there, where the claim loop handles it).
      deps.link.observe(err);
      deps.log.warn("could not give back entries read beyond the free slots; they are reclaimed when their lease lapses", { queue, err });
      deps.onError(err);
    }
  }
  let failed: unknown;
  for (const [queue, list] of toStart) {
    try {
      for (const reply of await deps.store.startEntries(queue, workerId, list, reclaimed)) deps.dispatch(queue, reply, reclaimed, leaseFrom);
    } catch (err) {
      // Its entries stay pending (reclaimed once their lease lapses); the other queues' start now.
      if (deps.link.observe(err) !== "other") throw err;
      failed ??= err;
    }
  }
  if (failed !== undefined) throw failed;
}
