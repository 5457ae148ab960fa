import { CorruptRecordError, type Keys, TaskNotFoundError } from "@flotilla/core";
import { isConnectionFailure, type SubscriberHub, translateRedisError, type Unsubscribe } from "@flotilla/core/redis";
import { readTaskLog, readTaskLogPage, subscribeTaskEvents } from "@flotilla/store";
import type { Redis } from "ioredis";
import { type FlotillaEvent, FlotillaEventSchema, isTerminalEvent } from "./schema.ts";
import type { StatusFeed } from "./status-feed.ts";

/** A live stream with nothing new reads the task again after this long (see streamEvents). */
export const QUIET_RECHECK_MS = 5000;

export interface StreamEventsOptions {
  /** Yield only events with a seq greater than this (resume after the last one seen). @default 0 */
  after?: number;
  /** Ends the iteration early. */
  signal?: AbortSignal;
  /** Events read per XRANGE page while replaying. @default 1000 */
  pageSize?: number;
}

export interface EventSource {
  redis: Redis;
  hub: SubscriberHub;
  keys: Keys;
  /** Status events, which travel on their queue's channel. */
  statusFeed: StatusFeed;
}

const TEXT_EVENT_KEYS = 7;

/**
 * The check TextEventSchema makes, written out: text events are most of what a stream carries, and
 * this takes the object as it is instead of building a copy. Anything else goes through the schema.
 */
function isTextEvent(raw: Record<string, unknown>): boolean {
  return (
    raw.type === "text" &&
    typeof raw.delta === "string" &&
    typeof raw.taskId === "string" &&
    typeof raw.agent === "string" &&
    Number.isInteger(raw.seq) &&
    (raw.seq as number) > 0 &&
    Number.isInteger(raw.attempt) &&
    (raw.attempt as number) >= 0 &&
    typeof raw.ts === "number" &&
    Number.isFinite(raw.ts) &&
    Object.keys(raw).length === TEXT_EVENT_KEYS
  );
}

export function parseEvent(raw: unknown, taskId: string): FlotillaEvent {
  if (raw !== null && typeof raw === "object" && isTextEvent(raw as Record<string, unknown>)) return raw as FlotillaEvent;
  const parsed = FlotillaEventSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CorruptRecordError(`event of task ${taskId}`, parsed.error.issues[0]?.message ?? "invalid");
  }
  return parsed.data;
}

/** A live message of a task's channel as events, or undefined when it is not a valid event batch. */
function parseLiveBatch(message: string, taskId: string): FlotillaEvent[] | undefined {
  try {
    const batch = JSON.parse(message) as unknown;
    return Array.isArray(batch) ? batch.map((raw) => parseEvent(raw, taskId)) : undefined;
  } catch {
    return undefined;
  }
}

/** Runs a read, riding out a dropped connection or a Redis restart for up to 30 s. */
async function patiently<T>(redis: Redis, read: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  const giveUpAt = Date.now() + 30_000;
  for (;;) {
    try {
      return await read();
    } catch (err) {
      if (!isConnectionFailure(err) || Date.now() > giveUpAt || signal?.aborted) throw translateRedisError(redis, err);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export interface StoredEvents {
  /** Every event after `after` still kept, in seq order. */
  events: FlotillaEvent[];
  /** Whether the task's record exists. */
  exists: boolean;
  /** The task has ended. */
  terminal: boolean;
}

/**
 * Reads a task's stored events after `after`: its status events from its record (with the result
 * put back on the `completed` one) merged with the rest from its event stream.
 */
export async function readEvents(
  redis: Redis,
  keys: Keys,
  taskId: string,
  options: { after?: number; pageSize?: number; signal?: AbortSignal } = {},
): Promise<StoredEvents> {
  const after = options.after ?? 0;
  const pageSize = options.pageSize ?? 1000;
  const first = await patiently(redis, () => readTaskLog(redis, keys, taskId, after, pageSize), options.signal);
  const { status, statusLog, result, agent } = first;
  const events: FlotillaEvent[] = [];
  if (statusLog) {
    let raws: unknown;
    try {
      raws = JSON.parse(`[${statusLog}]`);
    } catch {
      throw new CorruptRecordError(`status log of task ${taskId}`, "not JSON");
    }
    for (const raw of raws as Array<Record<string, unknown>>) {
      if (typeof raw?.seq !== "number" || raw.seq <= after) continue;
      if (raw.status === "completed" && result != null) raw.result = JSON.parse(result) as unknown;
      // The log's copy leaves out what the record holds once (older records still carry them).
      raw.type ??= "status";
      raw.taskId ??= taskId;
      raw.agent ??= agent ?? "";
      events.push(parseEvent(raw, taskId));
    }
  }
  let batches = first.batches;
  let more = first.more;
  for (;;) {
    for (const [id, json] of batches) {
      // One entry per published batch: a JSON array of events, the entry's id naming its last seq.
      const batch = JSON.parse(json) as unknown;
      if (!Array.isArray(batch)) throw new CorruptRecordError(`event stream of task ${taskId}`, `entry ${id} is not a batch`);
      for (const raw of batch) {
        const event = parseEvent(raw, taskId);
        if (event.seq > after) events.push(event);
      }
    }
    const lastId = batches.at(-1)?.[0];
    if (!more || lastId === undefined) break;
    batches = await patiently(redis, () => readTaskLogPage(redis, keys, taskId, lastId, pageSize), options.signal);
    more = batches.length === pageSize;
  }
  events.sort((a, b) => a.seq - b.seq);
  return { events, exists: status != null, terminal: status === "COMPLETED" || status === "FAILED" || status === "CANCELLED" };
}

/**
 * Yields a task's events in seq order: first what is stored, then live from Pub/Sub, ending after
 * the terminal status event.
 *
 * No gap and no duplicate: the task's channel and its queue's status channel are subscribed
 * *before* the stored events are read; live events at or below the last replayed seq are dropped;
 * a live event that skips a seq (a message lost to a reconnect) triggers a catch-up read, as do
 * every reconnect and every live message that is not a valid event batch (skipped, never thrown).
 */
export async function* streamEvents(
  sourceOrPromise: EventSource | Promise<EventSource>,
  taskId: string,
  options: StreamEventsOptions = {},
): AsyncGenerator<FlotillaEvent, void, undefined> {
  const source = await sourceOrPromise;
  const { redis, hub, keys } = source;
  const pageSize = options.pageSize ?? 1000;
  const signal = options.signal;
  let last = options.after ?? 0;
  let live: FlotillaEvent[] = [];
  let needCatchUp = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };

  const onMessage = (message: string) => {
    const batch = parseLiveBatch(message, taskId);
    // Unreadable (not JSON, not a batch, an event that fails its schema): whoever sent it, the
    // stream is the record, so the reader drops the whole message and reads the stream instead.
    if (batch) live.push(...batch);
    else needCatchUp = true;
    notify();
  };

  const onAbort = () => notify();
  signal?.addEventListener("abort", onAbort);
  const stopReconnect = hub.onReconnect(() => {
    needCatchUp = true;
    notify();
  });
  let unsubscribe: Unsubscribe | undefined;
  let unwatch: (() => void) | undefined;
  try {
    unsubscribe = await subscribeTaskEvents(hub, keys, taskId, onMessage);
    unwatch = await source.statusFeed.watch(taskId, (event) => {
      if (event) live.push(event);
      else needCatchUp = true;
      notify();
    });

    const catchUp = async () => readEvents(redis, keys, taskId, { after: last, pageSize, signal });

    const replay = await catchUp();
    if (!replay.exists && replay.events.length === 0) throw new TaskNotFoundError(taskId);
    for (const event of replay.events) {
      if (event.seq <= last) continue;
      last = event.seq;
      yield event;
      if (isTerminalEvent(event)) return;
    }
    // Ended, and its terminal event is gone (the record expired between the reads).
    if (replay.terminal || !replay.exists) return;

    for (;;) {
      if (signal?.aborted) return;
      if (needCatchUp) {
        needCatchUp = false;
        const caught = await catchUp();
        if (!caught.exists && caught.events.length === 0) return;
        // It ended, and nothing after what was told is stored or on its way: its end was numbered at
        // or below a seq already told (a failover lost writes the old master took, and the run went
        // on from the seq before them). Nothing more will come: end here, as an end whose event is gone.
        if (caught.terminal && caught.events.length === 0 && !live.some((e) => e.seq > last)) return;
        live = [...caught.events, ...live];
      }
      if (live.length === 0) {
        // Quiet for a while: read the stream and record again. A message lost where no reconnect
        // told of it (a failover's catch-up read answered by a node that was behind) must not stall
        // the stream for ever.
        let recheck: NodeJS.Timeout | undefined;
        await new Promise<void>((resolve) => {
          wake = resolve;
          recheck = setTimeout(() => {
            needCatchUp = true;
            notify();
          }, QUIET_RECHECK_MS);
          if (live.length > 0 || needCatchUp || signal?.aborted) notify();
        });
        clearTimeout(recheck);
        continue;
      }
      // Two channels feed `live`; order by seq before checking for gaps.
      const pending = live;
      live = [];
      for (let i = 1; i < pending.length; i++) {
        if (pending[i]!.seq < pending[i - 1]!.seq) {
          pending.sort((a, b) => a.seq - b.seq);
          break;
        }
      }
      for (let i = 0; i < pending.length; i++) {
        const event = pending[i]!;
        if (event.seq <= last) continue;
        if (event.seq > last + 1) {
          // A gap: fetch what is missing, then carry on with the rest.
          const filled = (await catchUp()).events;
          // Trimmed from the stream too: nothing can fill it, so move past it, to the first event still stored.
          if (!filled.some((e) => e.seq === last + 1)) last = Math.min(filled[0]?.seq ?? event.seq, event.seq) - 1;
          live = [...filled, ...pending.slice(i), ...live];
          break;
        }
        last = event.seq;
        yield event;
        if (isTerminalEvent(event)) return;
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    stopReconnect();
    unwatch?.();
    await unsubscribe?.();
  }
}
