import { exponentialDelay, type Keys, type Retention, sleep } from "@flotilla/core";
import { isConnectionFailure } from "@flotilla/core/redis";
import { flushEventAppends, TaskEventLog } from "@flotilla/store";
import type { Redis } from "ioredis";
import { type AgentEvent, keepsEvent } from "./schema.ts";

export interface PublisherOptions {
  taskId: string;
  /** Stamped on every event; the script accepts them only while this attempt runs. */
  attempt: number;
  /** Accept the events while any attempt of the task runs (a Temporal activity, which outlives attempts). */
  anyAttempt?: boolean;
  /**
   * Numbers this publisher's events within a named scope, and has Redis drop those already
   * published under it: a retried producer re-emitting the same scope repeats nothing.
   */
  scope?: string;
  agent: string;
  detailed: boolean;
  /** Called once when Redis refuses the attempt's events: the task ended or was taken over. */
  onStale?: () => void;
  /** Called after each batch Redis accepted: how many events of each type, and how long it took (ms). */
  onPublished?: (types: Readonly<Record<string, number>>, ms: number) => void;
  /** Messages waiting in the task's inbox as the attempt started (the start's reply says). @default 0 */
  messagesWaiting?: number;
  /**
   * How long a batch is sent again while Redis cannot be reached (a failover under way), before its
   * failure is kept for the next flush. @default 30_000
   */
  resendForMs?: number;
}

/**
 * Publishes one attempt's events. Events emitted in the same tick go to Redis as one batch (one
 * stream entry, one Pub/Sub message) in the order emitted, in one script call with the batches of
 * every other task of the queue that emitted in the tick; the script fences on the attempt.
 * One call is on its way at a time, and what is emitted meanwhile goes together as the next one
 * (at most MAX_BATCH events a call): a task that emits faster than its round trips batches more,
 * rather than queueing one call per tick behind each other.
 */
/** The chain of a publisher that has sent nothing yet. */
const IDLE: Promise<void> = Promise.resolve();

/** Publishers with events emitted since the last tick. */
const due = new Set<EventPublisher>();
let tickScheduled = false;

/**
 * Once a tick, for every publisher of the process: each sends what was emitted (a task whose call is
 * on its way sends it next), and the batches go to Redis together, one call per queue
 * (flushEventAppends): a worker streaming a thousand tasks makes a call per tick, not a thousand.
 */
function publishTick(): void {
  tickScheduled = false;
  const publishers = [...due];
  due.clear();
  // A failed send is kept and thrown by the next flush() the owner awaits; these have no owner, and
  // a rejection left unhandled here would end the process.
  for (const p of publishers) p.flush().catch(() => {});
  flushEventAppends();
}

export class EventPublisher {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly retention: Retention;
  /** Made at the first send: most tasks of a plain executor publish nothing, and pay nothing for it. */
  private log: TaskEventLog | undefined;
  private readonly opts: PublisherOptions;
  private buffer: string[] = [];
  private types: string[] = [];
  /** Flushed events not yet sent (and their types, when counted): the next call takes them together. */
  private queued: string[] = [];
  private queuedTypes: string[] = [];
  /** Sends the queued events, a call at a time, until none is left; resolves then. */
  private chain: Promise<void> = IDLE;
  private sending = false;
  private stale = false;
  private failure: unknown;
  private batches = 0;
  /** Events handed to `send` so far (their scope index). */
  private sent = 0;
  /** The fields the worker stamps on every event, as JSON members; `ts` is added per event (made at the first emit). */
  private stamp: string | undefined;
  /** Messages waiting in the task's inbox: the start's count, then each batch's reply, 0 once taken. */
  private waiting: number;
  /** Number of events Redis accepted. */
  published = 0;

  constructor(redis: Redis, keys: Keys, retention: Retention, options: PublisherOptions) {
    this.redis = redis;
    this.keys = keys;
    this.retention = retention;
    this.opts = options;
    this.waiting = options.messagesWaiting ?? 0;
  }

  get isStale(): boolean {
    return this.stale;
  }

  /**
   * How many messages wait in the task's inbox (sent to it: `handle.send`), as the last batch's
   * reply said (before any, as the start's did): a turn boundary takes them only when this is above 0.
   */
  get messagesWaiting(): number {
    return this.waiting;
  }

  /** The inbox was emptied (the run took what waited): none wait until a later reply says so. */
  messagesTaken(): void {
    this.waiting = 0;
  }

  emit(event: AgentEvent): void {
    if (this.stale || !keepsEvent(this.opts.detailed, event.type)) return;
    // The event's own JSON with the stamp spliced in: no copy of the event per emit. (AgentEvent has
    // none of the stamped keys; were one there anyway, the stamp comes later and wins in JSON.parse.)
    const body = JSON.stringify(event);
    if (this.opts.onPublished) this.types.push(event.type);
    const o = this.opts;
    if (this.stamp === undefined) this.stamp = `,"taskId":${JSON.stringify(o.taskId)},"attempt":${o.attempt},"agent":${JSON.stringify(o.agent)},"ts":`;
    const stamp = this.stamp;
    this.buffer.push(`${body.length > 2 ? body.slice(0, -1) : "{"}${body.length > 2 ? stamp : stamp.slice(1)}${Date.now()}}`);
    due.add(this);
    if (!tickScheduled) {
      tickScheduled = true;
      setImmediate(publishTick);
    }
  }

  /**
   * The attempt is no longer this publisher's to speak for (its worker stopped the run: the lease
   * could not be renewed): drops what is buffered and sends nothing more, without waiting for Redis.
   * A batch already on its way may still land; Redis fences it on the attempt.
   */
  abandon(): void {
    this.stale = true;
    this.buffer = [];
    this.types = [];
    this.queued = [];
    this.queuedTypes = [];
  }

  /** Sends what is buffered; resolves when every event emitted so far is in Redis. */
  flush(): Promise<void> {
    if (this.buffer.length > 0) {
      for (const body of this.buffer) this.queued.push(body);
      for (const type of this.types) this.queuedTypes.push(type);
      this.buffer = [];
      this.types = [];
      // A call on its way takes these next, in the same loop: the chain resolves once they are in.
      if (!this.sending) this.chain = this.pump();
    }
    // Nothing was ever sent (most tasks of a plain executor): no promise to chain.
    if (this.chain === IDLE && this.failure === undefined) return IDLE;
    return this.chain.then(() => {
      if (this.failure) throw this.failure;
    });
  }

  private async pump(): Promise<void> {
    this.sending = true;
    try {
      while (this.queued.length > 0) {
        const batch = this.queued.splice(0, MAX_BATCH);
        const types = this.queuedTypes.splice(0, batch.length);
        await this.send(batch, types);
      }
    } finally {
      this.sending = false;
    }
  }

  private async send(batch: string[], types: string[]): Promise<void> {
    if (this.stale || this.failure) return;
    const started = performance.now();
    try {
      const first = this.sent + 1;
      this.sent += batch.length;
      const batchId = this.opts.scope === undefined ? `${this.opts.attempt}:${++this.batches}` : `scope=${this.opts.scope}:${first}`;
      const last = await this.append(batchId, batch);
      if (this.log) this.waiting = this.log.messagesWaiting;
      if (last < 0) {
        this.stale = true;
        this.opts.onStale?.();
      } else {
        this.published += batch.length;
        if (this.opts.onPublished) {
          const counts: Record<string, number> = {};
          for (const t of types) counts[t] = (counts[t] ?? 0) + 1;
          this.opts.onPublished(counts, performance.now() - started);
        }
      }
    } catch (err) {
      this.failure = err;
    }
  }

  /**
   * Appends a batch, sent again while Redis cannot be reached (a failover under way): the batch id
   * makes a resend that already landed a no-op. Ends when it lands, when the publisher is abandoned
   * (the worker stopped the run: its lease could not be renewed), or after `resendForMs`.
   */
  private async append(batchId: string, batch: string[]): Promise<number> {
    const giveUpAt = Date.now() + (this.opts.resendForMs ?? RESEND_FOR_MS);
    for (let tries = 0; ; tries++) {
      try {
        this.log ??= new TaskEventLog(this.redis, this.keys, this.retention, this.opts.taskId);
        return await this.log.append(this.opts.anyAttempt ? "*" : this.opts.attempt, batchId, batch);
      } catch (err) {
        if (!isConnectionFailure(err) || this.stale || Date.now() > giveUpAt) throw err;
        await sleep(exponentialDelay(RESEND_BACKOFF, tries));
      }
    }
  }
}

/** Events in one call at most: a backlog goes in calls of this size, one after another. */
const MAX_BATCH = 1000;
/** How long a batch is sent again while Redis cannot be reached, at most. */
const RESEND_FOR_MS = 30_000;
/** Pause before each resend: 50 ms, doubling to 1 s. */
const RESEND_BACKOFF = { baseMs: 50, maxMs: 1_000 };
