import {
  CorruptRecordError,
  isConnectionFailure,
  type Keys,
  type SubscriberHub,
  TaskNotFoundError,
  translateRedisError,
  type Unsubscribe,
} from "@flotilla/core";
import type { Redis } from "ioredis";
import { type FlotillaEvent, FlotillaEventSchema, isTerminalEvent } from "./schema.ts";

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
  /** Whether the task exists and has ended; used when its event stream has expired. */
  taskState(taskId: string): Promise<"missing" | "active" | "terminal">;
}

export function parseEvent(raw: unknown, taskId: string): FlotillaEvent {
  const parsed = FlotillaEventSchema.safeParse(raw);
  if (!parsed.success) {
    throw new CorruptRecordError(`event of task ${taskId}`, parsed.error.issues[0]?.message ?? "invalid");
  }
  return parsed.data;
}

/** XRANGE that rides out a dropped connection or a Redis restart for up to 30 s. */
async function readRange(redis: Redis, key: string, from: string, count: number, signal: AbortSignal | undefined) {
  const giveUpAt = Date.now() + 30_000;
  for (;;) {
    try {
      return await redis.xrange(key, from, "+", "COUNT", count);
    } catch (err) {
      if (!isConnectionFailure(err) || Date.now() > giveUpAt || signal?.aborted) throw translateRedisError(redis, err);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/**
 * Yields a task's events in seq order: first what the stream holds, then live from Pub/Sub,
 * ending after the terminal status event.
 *
 * No gap and no duplicate: the channel is subscribed *before* the replay is read; live events at
 * or below the last replayed seq are dropped; a live event that skips a seq (a message lost to a
 * reconnect) triggers a catch-up read from the stream, as does every reconnect.
 */
export async function* streamEvents(
  source: EventSource,
  taskId: string,
  options: StreamEventsOptions = {},
): AsyncGenerator<FlotillaEvent, void, undefined> {
  const { redis, hub, keys } = source;
  const streamKey = keys.events(taskId);
  const pageSize = options.pageSize ?? 1000;
  const signal = options.signal;
  let last = options.after ?? 0;
  let live: FlotillaEvent[] = [];
  let needCatchUp = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };

  const onMessage = (message: string) => {
    try {
      const batch = JSON.parse(message) as unknown[];
      for (const raw of batch) live.push(parseEvent(raw, taskId));
    } catch (err) {
      failure = err;
    }
    notify();
  };

  const onAbort = () => notify();
  signal?.addEventListener("abort", onAbort);
  const stopReconnect = hub.onReconnect(() => {
    needCatchUp = true;
    notify();
  });
  let unsubscribe: Unsubscribe | undefined;
  try {
    unsubscribe = await hub.subscribe(keys.eventsChannel(taskId), onMessage);

    // Reads everything after `last` from the stream; returns the events in order.
    const catchUp = async (): Promise<FlotillaEvent[]> => {
      const out: FlotillaEvent[] = [];
      let from = `(0-${last}`;
      for (;;) {
        const rows = await readRange(redis, streamKey, from, pageSize, signal);
        for (const [id, fields] of rows) {
          out.push(parseEvent(JSON.parse(fields[1] ?? "null"), taskId));
          from = `(${id}`;
        }
        if (rows.length < pageSize) return out;
      }
    };

    let sawAny = false;
    const replay = await catchUp();
    for (const event of replay) {
      if (event.seq <= last) continue;
      last = event.seq;
      sawAny = true;
      yield event;
      if (isTerminalEvent(event)) return;
    }
    // Nothing terminal in the stream: the task may be unknown, or ended long enough ago that its
    // events expired.
    const state = await source.taskState(taskId);
    if (state === "missing" && !sawAny) throw new TaskNotFoundError(taskId);
    if (state === "terminal") {
      // Its terminal event is either in the stream now (published since our read) or gone.
      for (const event of await catchUp()) {
        if (event.seq <= last) continue;
        last = event.seq;
        yield event;
        if (isTerminalEvent(event)) return;
      }
      return;
    }

    for (;;) {
      if (signal?.aborted) return;
      if (failure) throw failure;
      if (needCatchUp) {
        needCatchUp = false;
        live = [...(await catchUp()), ...live];
      }
      if (live.length === 0) {
        await new Promise<void>((resolve) => {
          wake = resolve;
          if (live.length > 0 || needCatchUp || failure || signal?.aborted) notify();
        });
        continue;
      }
      const pending = live;
      live = [];
      for (let i = 0; i < pending.length; i++) {
        const event = pending[i]!;
        if (event.seq <= last) continue;
        if (event.seq > last + 1) {
          // A gap: fetch what is missing from the stream, then carry on with the rest.
          const filled = await catchUp();
          // Trimmed from the stream too: nothing can fill it, so move past it.
          if (!filled.some((e) => e.seq === last + 1)) last = event.seq - 1;
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
    await unsubscribe?.();
  }
}
