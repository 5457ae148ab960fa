import {
  backoffDelay,
  DEFAULT_BACKOFF,
  ErrorCodes,
  FlotillaError,
  isRetryable,
  type JsonValue,
  type Keys,
  type Logger,
  sleep,
  type TaskError,
  toTaskError,
} from "@flotilla/core";
import { disconnectRedis } from "@flotilla/core/redis";
import { type FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { Acker, CHUNK } from "./acker.ts";
import { type BusEvent, decodeEvent, publishedAtOf } from "./event.ts";
import type { Publisher } from "./publisher.ts";
import type { Replier } from "./replier.ts";
import type { ResolvedBusTuning } from "./schemas.ts";
import { scripts } from "./scripts.ts";
import type { HandlerContext, Subscription } from "./subscription.ts";
import { abortable, fieldsOf } from "./util.ts";

/** An idle consumer (no events held) silent this long is forgotten by the group's upkeep. */
const PRUNE_IDLE_MS = 600_000;
/** Upkeep (trim, prune, gauges) runs this often. */
const UPKEEP_MS = 10_000;
/** What XCLAIM's IDLE is set to on a delivery handed back at shutdown: any reclaimer may take it at once. */
const HANDED_BACK_IDLE_MS = 365 * 86_400_000;

export interface ConsumerDeps {
  redis: Redis;
  /** Opens the connection this consumer's blocking reads use (closed by it). */
  blocking: () => Redis;
  keys: Keys;
  publisher: Publisher;
  replier: Replier;
  tuning: ResolvedBusTuning;
  /** This process's consumer name in every group (the worker id). */
  consumer: string;
  logger: Logger;
  metrics: FlotillaMetrics;
  /** How long a blocking read waits. @default 1000 */
  blockMs?: number;
}

type Held = { controller: AbortController; lost: boolean };

/**
 * One subscription served by one process: reads new events through the group, takes over the
 * deliveries of dead consumers and the retries that are due, keeps the leases of the events it
 * handles, and settles each (ack, retry, dead letter). Its handler runs at most `concurrency`
 * events at once.
 */
export class GroupConsumer {
  private readonly held = new Map<string, Held>();
  private readonly acker: Acker;
  private readonly k: Record<"stream" | "retries" | "errors" | "dead" | "stats" | "leases" | "metrics" | "hint", string>;
  private readonly group: string;
  private running = false;
  private reader: Redis | undefined;
  private loop: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private renewTimer: NodeJS.Timeout | undefined;
  private slotFree: () => void = () => {};
  private reclaiming = false;
  /** The group's lag and pending count as the last upkeep read them, for the gauges. */
  figures = { lag: 0, pending: 0 };

  private readonly sub: Subscription;
  private readonly run: (event: BusEvent, ctx: HandlerContext) => Promise<unknown>;
  private readonly deps: ConsumerDeps;

  constructor(sub: Subscription, run: (event: BusEvent, ctx: HandlerContext) => Promise<unknown>, deps: ConsumerDeps) {
    this.sub = sub;
    this.run = run;
    this.deps = deps;
    const { keys } = deps;
    const t = sub.topic;
    this.group = sub.options.name;
    this.k = {
      stream: keys.topic(t),
      retries: keys.topicRetries(t, this.group),
      errors: keys.topicErrors(t, this.group),
      dead: keys.topicDeadLetters(t, this.group),
      stats: keys.topicStats(t),
      leases: keys.topicLeases(t, this.group),
      metrics: keys.topicMetrics(t),
      hint: `${keys.topicBase(t)}trimhint`,
    };
    this.acker = new Acker({ redis: deps.redis, keys: this.k, group: this.group, metrics: deps.metrics, logger: deps.logger, attrs: this.attrs });
  }

  private get leaseMs(): number {
    return this.sub.options.reclaimAfterMs;
  }

  private get attrs() {
    return { topic: this.sub.topic, group: this.group };
  }

  async start(): Promise<void> {
    await this.makeGroup();
    await this.deps.redis.sadd(this.deps.keys.topics(), this.sub.topic);
    // The gauges show the backlog found at start (after a restart it can be large), not zeros until the first upkeep.
    await this.readFigures().catch((err) => this.deps.logger.warn("could not read the subscription's lag and pending count", { err, ...this.attrs }));
    this.running = true;
    this.reader = this.deps.blocking();
    this.loop = this.readLoop();
    const every = (ms: number, fn: () => Promise<unknown>) => {
      const t = setInterval(() => void fn().catch((err) => this.deps.logger.warn("bus upkeep failed; will retry", { err, ...this.attrs })), ms);
      t.unref();
      return t;
    };
    this.renewTimer = every(Math.floor(this.leaseMs / 3), () => this.renew());
    this.timers.push(
      every(Math.min(1000, Math.floor(this.leaseMs / 2)), () => this.reclaim()),
      every(UPKEEP_MS, () => this.upkeep()),
    );
    void this.reclaim().catch(() => {});
  }

  /**
   * Stops reading, waits up to `drainMs` for the events being handled, then aborts the rest and hands
   * them back (any consumer may take them at once); the group keeps everything not yet settled.
   */
  async stop(drainMs: number): Promise<void> {
    this.running = false;
    this.slotFree();
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    // disconnectRedis, not disconnect(): a reader waiting to reconnect would leave its read, and this loop, pending for ever.
    if (this.reader) disconnectRedis(this.reader);
    await this.loop;
    const deadline = Date.now() + drainMs;
    while (this.held.size > 0 && Date.now() < deadline) await sleep(20);
    const left = [...this.held.keys()];
    for (const h of this.held.values()) h.controller.abort(new Error("the worker is stopping"));
    // Leases were renewed through the drain; only now can they lapse.
    clearInterval(this.renewTimer);
    await this.acker.flush();
    if (left.length > 0) {
      await this.deps.redis
        .xclaim(this.k.stream, this.group, this.deps.consumer, 0, ...left, "IDLE", HANDED_BACK_IDLE_MS, "JUSTID")
        .catch((err) => this.deps.logger.warn("could not hand back deliveries; they are taken over after their lease", { err, ...this.attrs }));
    }
  }

  /** Creates the group where the subscription says it starts; an existing group keeps its place. */
  private async makeGroup(): Promise<void> {
    const from = this.sub.options.from;
    const start = from === "new" ? "$" : from === "start" ? "0" : from;
    try {
      await this.deps.redis.xgroup("CREATE", this.k.stream, this.group, start, "MKSTREAM");
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith("BUSYGROUP"))) throw err;
    }
  }

  private async readLoop(): Promise<void> {
    const { consumer, logger } = this.deps;
    let failures = 0;
    while (this.running) {
      const free = this.sub.options.concurrency - this.held.size;
      if (free <= 0) {
        await new Promise<void>((resolve) => {
          this.slotFree = resolve;
        });
        continue;
      }
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        reply = (await this.reader!.xreadgroup(
          "GROUP",
          this.group,
          consumer,
          "COUNT",
          free,
          "BLOCK",
          this.deps.blockMs ?? 1000,
          "STREAMS",
          this.k.stream,
          ">",
        )) as typeof reply;
        failures = 0;
      } catch (err) {
        if (!this.running) return;
        if (err instanceof Error && err.message.startsWith("NOGROUP")) {
          // The stream or group is gone (Redis lost its data, or the subscription was deleted while served): made again.
          logger.warn("the subscription's group is missing; making it again", { ...this.attrs });
          await this.makeGroup().catch(() => {});
        } else {
          logger.warn("bus read failed; will retry", { err, ...this.attrs });
        }
        await sleep(Math.min(5000, 100 * 2 ** Math.min(failures++, 6)));
        continue;
      }
      const entries = reply?.[0]?.[1] ?? [];
      if (entries.length === 0) continue;
      this.deps.metrics.add(METRICS.busDelivered, entries.length, this.attrs);
      void this.deps.redis.hincrby(this.k.stats, `${this.group}:delivered`, entries.length).catch(() => {});
      for (const [id, fields] of entries) this.dispatch(id, fields, 1, undefined);
    }
  }

  /** Handles one delivery in the background; its slot frees when it is settled. */
  private dispatch(id: string, fields: string[] | null, deliveries: number, lastError: TaskError | undefined): void {
    if (this.held.has(id)) return;
    const held: Held = { controller: new AbortController(), lost: false };
    this.held.set(id, held);
    void this.handle(id, fields ?? [], deliveries, lastError, held).finally(() => {
      this.held.delete(id);
      this.slotFree();
    });
  }

  private async handle(id: string, fields: string[], deliveries: number, lastError: TaskError | undefined, held: Held): Promise<void> {
    const { topic } = this.sub;
    const { timeoutMs } = this.sub.options;
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const signal = timeout ? AbortSignal.any([held.controller.signal, timeout]) : held.controller.signal;
    const started = performance.now();
    let event: BusEvent | undefined;
    try {
      event = decodeEvent(topic, id, fields);
      const e = event;
      const ctx: HandlerContext = {
        signal,
        deliveryCount: deliveries,
        publishedAt: publishedAtOf(id),
        topic,
        subscription: this.group,
        consumer: this.deps.consumer,
        lastError: lastError && { code: lastError.code, message: lastError.message },
        publish: (t, payload, options = {}) =>
          this.deps.publisher
            .publishMany([{ topic: t, payload, options: { correlationId: e.correlationId, ...options, causationId: e.id } }])
            .then((ids) => ids[0]!),
      };
      const result = await abortable(this.run(event, ctx), signal);
      this.deps.metrics.record(METRICS.busHandleDuration, (performance.now() - started) / 1000, this.attrs);
      if (held.lost) return;
      await this.deps.replier.reply(event, this.group, (result ?? null) as JsonValue, this.sub.options.webhookSecret !== undefined);
      await this.acker.ack(id, lastError !== undefined);
    } catch (err) {
      if (held.lost || (!this.running && held.controller.signal.aborted)) return;
      const timedOut = timeout?.aborted && !held.controller.signal.aborted;
      await this.fail(id, event, deliveries, timedOut ? new FlotillaError(ErrorCodes.TIMEOUT, `the handler ran past its timeoutMs (${timeoutMs} ms)`) : err);
    }
  }

  private async fail(id: string, event: BusEvent | undefined, deliveries: number, err: unknown): Promise<void> {
    const error = toTaskError(err);
    const { maxRetries, deadLetter } = this.sub.options;
    const reason = isRetryable(err) ? "" : error.code;
    const final = reason !== "" || deliveries > maxRetries;
    if (final && !deadLetter) {
      this.deps.logger.warn("event dropped after its last delivery failed (deadLetter: false)", { ...this.attrs, event: id, error: error.message });
      // Failed for good all the same: a requester is told now rather than timing out (before the ack, as a handled event's reply).
      if (event) await this.deps.replier.replyError(event, this.group, error).catch(() => {});
      return this.acker.ack(id, true);
    }
    const dueAt = Date.now() + backoffDelay(this.sub.options.backoff ?? DEFAULT_BACKOFF, deliveries - 1);
    const [outcome] = (await scripts.fail.run(
      this.deps.redis,
      [this.k.stream, this.k.retries, this.k.errors, this.k.dead, this.k.stats, this.k.metrics],
      [
        this.group,
        this.deps.consumer,
        id,
        maxRetries + 1,
        dueAt,
        JSON.stringify(error),
        reason,
        this.deps.tuning.deadLetterMaxLen,
        this.deps.tuning.metricsMaxLen,
        Date.now(),
      ],
    )) as [string, number];
    if (outcome === "retry") {
      this.deps.metrics.add(METRICS.busRetried, 1, this.attrs);
      // Due before the next reclaim tick: look for it when it is due, not up to a tick late.
      const wake = setTimeout(() => void this.reclaim().catch(() => {}), Math.max(0, dueAt - Date.now()) + 5);
      wake.unref();
    }
    if (outcome === "dead") {
      this.deps.metrics.add(METRICS.busDeadLettered, 1, this.attrs);
      this.deps.logger.warn("event dead-lettered", { ...this.attrs, event: id, reason: reason || "RETRIES_EXHAUSTED", error: error.message });
      if (event) await this.deps.replier.replyError(event, this.group, error).catch(() => {});
    }
  }

  /** Renews the leases of the events being handled; one taken over is aborted (its handler's writes are its own). */
  private async renew(): Promise<void> {
    const held = [...this.held.keys()];
    const lost: string[] = [];
    for (let i = 0; i < held.length; i += CHUNK) {
      const ids = held.slice(i, i + CHUNK);
      lost.push(
        ...((await scripts.renew.run(this.deps.redis, [this.k.stream, this.k.leases], [this.group, this.deps.consumer, this.leaseMs, ...ids])) as string[]),
      );
    }
    for (const id of lost) {
      const h = this.held.get(id);
      if (!h) continue;
      h.lost = true;
      h.controller.abort(new Error("the delivery's lease was lost: another consumer took it over"));
    }
  }

  /** Takes the due retries and the deliveries of dead consumers, scanning the whole pending list. */
  private async reclaim(): Promise<void> {
    if (this.reclaiming || !this.running) return;
    this.reclaiming = true;
    try {
      let cursor = "0-0";
      do {
        // At most CHUNK / 10 per call: the script looks at ten times as many pending entries (unpack's limit).
        const free = Math.min(CHUNK / 10, this.sub.options.concurrency - this.held.size);
        if (free <= 0) return;
        // `reclaimed` of those taken were a lapsed holder's (the rest: due retries).
        const [next, taken, reclaimed] = (await scripts.reclaim.run(
          this.deps.redis,
          [this.k.stream, this.k.retries, this.k.errors, this.k.leases, this.k.stats, this.k.metrics],
          [this.group, this.deps.consumer, this.leaseMs, free, cursor, Date.now(), this.deps.tuning.metricsMaxLen],
        )) as [string, Array<[string, string[], number, string | null]>, number];
        for (const [id, fields, deliveries, lastError] of taken) {
          this.dispatch(id, fields, deliveries, lastError ? (JSON.parse(lastError) as TaskError) : undefined);
        }
        if (taken.length > 0) this.deps.metrics.add(METRICS.busDelivered, taken.length, this.attrs);
        if (reclaimed > 0) this.deps.metrics.add(METRICS.busReclaimed, reclaimed, this.attrs);
        cursor = next;
      } while (cursor !== "0-0" && this.running);
    } catch (err) {
      if (err instanceof Error && err.message.startsWith("NOGROUP")) return;
      throw err;
    } finally {
      this.reclaiming = false;
    }
  }

  /** Trims the topic (never past what a group has not settled), forgets idle consumers, reads the gauges' figures. */
  private async upkeep(): Promise<void> {
    const { redis, consumer, tuning } = this.deps;
    await scripts.trim.run(redis, [this.k.stream, this.k.hint], [tuning.maxLen]);
    await scripts.pruneConsumers.run(redis, [this.k.stream, this.k.leases], [this.group, Math.max(PRUNE_IDLE_MS, this.leaseMs * 10), consumer]);
    await this.readFigures();
  }

  /** Reads the group's lag and pending count (XINFO GROUPS) for the gauges. */
  private async readFigures(): Promise<void> {
    const groups = (await this.deps.redis.xinfo("GROUPS", this.k.stream)) as unknown[][];
    for (const g of groups) {
      const info = fieldsOf(g);
      if (info.name === this.group) this.figures = { lag: Number(info.lag ?? 0), pending: Number(info.pending ?? 0) };
    }
  }
}
