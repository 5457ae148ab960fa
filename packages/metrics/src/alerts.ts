import { randomUUID } from "node:crypto";
import { createKeys, type Keys } from "@flotilla/core";
import { closeRedis, formatBytes, type OwnedRedis, openRedis, type RedisConnection, resolvePrefix } from "@flotilla/core/redis";
import { listQueues } from "@flotilla/store";
import type { Redis } from "ioredis";
import { readAlerts } from "./alert-sinks.ts";
import { type QueueState, readFigures } from "./fleet-figures.ts";

export type Severity = "warning" | "critical";

/** What a rule says of one queue: whether it fires, and why. */
export interface RuleVerdict {
  firing: boolean;
  value: number;
  threshold: number;
  message: string;
}

export interface AlertRule {
  /** Stable name, e.g. `queue_depth_critical`; an alert's id is `<name>:<queue>`. */
  name: string;
  severity: Severity;
  /**
   * "queue": judged for each queue. "fleet" and "redis": judged once, against figures whose queue is
   * "*" (counts summed over the queues, `liveWorkers` every live worker, Redis's memory): the alert's
   * id is `<name>:*`. The two differ only in what they say they watch.
   * @default "queue"
   */
  scope?: "queue" | "fleet" | "redis";
  /**
   * The rule must hold this long, round after round, before its alert fires (its `since` is when it
   * began to hold): a blip shorter than that — a worker restarting — sends nothing.
   * @default 0 (fires on the first round that finds it)
   */
  forMs?: number;
  /** Undefined: the rule has nothing to say of this queue (no data). */
  check(queue: QueueState): RuleVerdict | undefined;
}

export interface AlertEvent {
  id: string;
  rule: string;
  severity: Severity;
  /** `firing` when it starts (and again after `repeatIntervalMs` while it lasts), `resolved` when it clears. */
  state: "firing" | "resolved";
  queue: string;
  message: string;
  value: number;
  threshold: number;
  /** When the alert started firing (ms). */
  since: number;
  at: number;
}

/**
 * Where alert events go. A sink may also keep the figures of what fires current: `refresh` is
 * called after every round the manager evaluates, with the alerts firing and their figures as of
 * that round (an event is sent only when an alert starts, repeats or resolves), and how long those
 * figures stay good for (3 rounds).
 */
export type AlertSink = ((event: AlertEvent) => void | Promise<void>) & {
  refresh?: (firing: readonly AlertEvent[], validForMs: number) => void | Promise<void>;
};

export interface AlertThresholds {
  /** @default 100 */
  depthWarning?: number;
  /** @default 500 */
  depthCritical?: number;
  /** Failed ÷ (completed + failed) over the window. @default 0.1 */
  failureRate?: number;
  /** Outcomes needed in the window before the failure rate counts. @default 5 */
  failureRateMinSamples?: number;
  /** @default 60_000 */
  waitP95Ms?: number;
  /** Redis's used_memory ÷ maxmemory at which `redis_memory_near_limit` fires (no limit set: never). @default 0.9 */
  redisMemoryRatio?: number;
  /** How long no worker may be alive before `no_worker_alive` fires (a restart or a deploy is shorter). @default 30_000 */
  noWorkerForMs?: number;
}

const depthRule = (name: string, severity: Severity, limit: number): AlertRule => ({
  name,
  severity,
  check: (q) => ({ firing: q.waiting > limit, value: q.waiting, threshold: limit, message: `${q.waiting} tasks waiting in "${q.queue}" (over ${limit})` }),
});

/** The default rules, every threshold configurable. */
export function defaultRules(t: AlertThresholds = {}): AlertRule[] {
  const depthWarning = t.depthWarning ?? 100;
  const depthCritical = t.depthCritical ?? 500;
  const failureRate = t.failureRate ?? 0.1;
  const minSamples = t.failureRateMinSamples ?? 5;
  const waitP95 = t.waitP95Ms ?? 60_000;
  const memoryRatio = t.redisMemoryRatio ?? 0.9;
  return [
    depthRule("queue_depth_warning", "warning", depthWarning),
    depthRule("queue_depth_critical", "critical", depthCritical),
    {
      name: "failure_rate",
      severity: "warning",
      check: (q) => {
        const outcomes = q.completed + q.failed;
        if (outcomes < minSamples) return { firing: false, value: 0, threshold: failureRate, message: "too few outcomes to judge" };
        const rate = q.failed / outcomes;
        return {
          firing: rate > failureRate,
          value: rate,
          threshold: failureRate,
          message: `${Math.round(rate * 100)} % of "${q.queue}"'s tasks failed in the window (${q.failed} of ${outcomes})`,
        };
      },
    },
    {
      name: "no_live_worker",
      severity: "critical",
      check: (q) => ({
        firing: q.waiting > 0 && q.liveWorkers === 0,
        value: q.liveWorkers,
        threshold: 1,
        message: `${q.waiting} tasks wait in "${q.queue}" and no live worker serves it`,
      }),
    },
    {
      // Even with every queue empty: a fleet with no worker runs nothing that is submitted next.
      name: "no_worker_alive",
      severity: "critical",
      scope: "fleet",
      forMs: t.noWorkerForMs ?? 30_000,
      check: (f) => ({
        firing: f.liveWorkers === 0,
        value: f.liveWorkers,
        threshold: 1,
        message: f.waiting > 0 ? `no worker is alive, and ${f.waiting} tasks wait` : "no worker is alive: tasks submitted now will wait until one starts",
      }),
    },
    {
      name: "wait_time_p95",
      severity: "warning",
      check: (q) =>
        q.waitP95Ms === undefined
          ? undefined
          : {
              firing: q.waitP95Ms > waitP95,
              value: q.waitP95Ms,
              threshold: waitP95,
              message: `95 % of "${q.queue}"'s tasks waited up to ${q.waitP95Ms} ms (over ${waitP95})`,
            },
    },
    {
      name: "redis_memory_near_limit",
      severity: "critical",
      scope: "redis",
      check: ({ redisMemory: { usedBytes, maxBytes } }) => {
        // No limit: never near it (and an alert raised under a limit since removed resolves).
        if (maxBytes === 0) return { firing: false, value: 0, threshold: memoryRatio, message: "Redis has no maxmemory" };
        const ratio = usedBytes / maxBytes;
        return {
          firing: ratio >= memoryRatio,
          value: ratio,
          threshold: memoryRatio,
          message: `Redis uses ${formatBytes(usedBytes)} of its maxmemory ${formatBytes(maxBytes)} (${Math.round(ratio * 100)} %): at the limit it refuses submits and workers take no new work`,
        };
      },
    },
  ];
}

export interface AlertManagerOptions {
  redis?: RedisConnection;
  /** @default FLOTILLA_PREFIX, else "flotilla" */
  prefix?: string;
  /** Queues to watch. @default every queue tasks were submitted to */
  queues?: string[];
  /** @default defaultRules(thresholds) */
  rules?: AlertRule[];
  thresholds?: AlertThresholds;
  sinks: AlertSink[];
  /** How often rules are evaluated. @default 15_000 */
  intervalMs?: number;
  /** The window of the failure rate and wait-time figures. @default 300_000 */
  windowMs?: number;
  /** A firing alert is sent again after this long if it still fires. @default 3_600_000 */
  repeatIntervalMs?: number;
  /** Called when an evaluation or a sink fails (it is retried next round). */
  onError?: (err: unknown) => void;
  /**
   * Take the alerts firing in the alert stream (`{prefix}:alerts`, as `redisStreamSink` writes it) as
   * this manager's own on its first round: after a restart (or a hand-over, see `exclusive`) an alert
   * still firing is not sent again, and one that cleared meanwhile is sent resolved.
   * @default false
   */
  resume?: boolean;
  /**
   * Only one manager of the prefix evaluates at a time: each round it takes or renews a lease in Redis
   * (`{prefix}:alerts:lease`, 3 × `intervalMs`); the others stand by, and one takes over within that
   * once the holder stops or dies (resuming from the stream when `resume` is set). For several
   * gateways running the default rules: each alert is sent once, not once per gateway.
   * @default false
   */
  exclusive?: boolean;
}

interface Firing {
  event: AlertEvent;
  lastSent: number;
}

/**
 * Evaluates alert rules on a timer against the live figures of the fleet (queue depths and workers
 * from Redis; outcomes and wait times from the fleet statistics workers write). An alert fires once,
 * is sent again only after a quiet period while it lasts, and resolves when its rule clears.
 */
export class AlertManager {
  private readonly options: AlertManagerOptions;
  private readonly keys: Keys;
  private readonly rules: AlertRule[];
  private readonly firing = new Map<string, Firing>();
  /** Alerts whose rule holds but not yet for its `forMs`: id → when it began to hold. */
  private readonly pending = new Map<string, number>();
  private conn: OwnedRedis | undefined;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<AlertEvent[]> | undefined;
  /** Counts stop() calls: a round queued before the last stop does nothing (see stop). */
  private stops = 0;
  /** Holds the lease (with `exclusive`). */
  private leading = false;
  /** Took the stream's firing alerts as its own (see `resume`): once, and again after each stand-by. */
  private resumed = false;
  private readonly id = randomUUID();

  constructor(options: AlertManagerOptions) {
    this.options = options;
    this.keys = createKeys(resolvePrefix(options.prefix));
    this.rules = options.rules ?? defaultRules(options.thresholds);
  }

  /** With `exclusive`, whether this manager evaluates the rules now (the others stand by). */
  get leader(): boolean {
    return this.options.exclusive ? this.leading : true;
  }

  private get redis(): Redis {
    // Fail fast: a round that cannot reach Redis fails (onError; the next round tries again) rather
    // than waiting for it, so stop() never waits on a Redis that is gone.
    this.conn ??= openRedis(this.options.redis, "command", { failFast: true });
    return this.conn.redis;
  }

  /** Alerts firing now. */
  get active(): AlertEvent[] {
    return [...this.firing.values()].map((f) => f.event);
  }

  start(): void {
    if (this.timer) return;
    const tick = () => {
      void this.evaluate().catch((err) => this.options.onError?.(err));
    };
    tick();
    this.timer = setInterval(tick, this.options.intervalMs ?? 15_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    // Only the round in flight is waited for (its reads fail fast while Redis is down): a slow
    // Redis may have queued several behind it, and those do nothing now.
    this.stops++;
    await this.round?.catch(() => {});
    // Hand over at once rather than after the lease: the next manager resumes from the stream.
    if (this.options.exclusive && this.leading) {
      this.leading = false;
      if ((await this.redis.get(this.keys.alertsLease()).catch(() => null)) === this.id) await this.redis.del(this.keys.alertsLease()).catch(() => {});
    }
    await closeRedis(this.conn);
    this.conn = undefined;
  }

  /** One round: reads the figures, checks every rule, sends what changed; returns the events sent. */
  evaluate(now = Date.now()): Promise<AlertEvent[]> {
    const stops = this.stops;
    const round = (this.round ?? Promise.resolve([])).catch(() => []).then(() => (stops === this.stops ? this.evaluateOnce(now) : []));
    this.round = round;
    return round;
  }

  /**
   * With `exclusive`: takes the lease if free, renews it if held. A renewal races its expiry only
   * when a round took longer than the lease; then two managers may both send one round.
   */
  private async lead(): Promise<boolean> {
    const key = this.keys.alertsLease();
    const ttl = 3 * (this.options.intervalMs ?? 15_000);
    if ((await this.redis.set(key, this.id, "PX", ttl, "NX")) === "OK") this.leading = true;
    else this.leading = (await this.redis.get(key)) === this.id && (await this.redis.pexpire(key, ttl)) === 1;
    return this.leading;
  }

  /** Takes the alerts the stream says fire as this manager's own (see `resume`). */
  private async resume(): Promise<void> {
    this.resumed = true;
    const { firing } = await readAlerts(this.redis, this.keys);
    this.firing.clear();
    for (const event of firing) this.firing.set(event.id, { event, lastSent: event.at });
  }

  private async evaluateOnce(now: number): Promise<AlertEvent[]> {
    if (this.options.exclusive && !(await this.lead())) {
      // Standing by: when it leads again, it takes over what the leader had firing.
      this.firing.clear();
      this.pending.clear();
      this.resumed = false;
      return [];
    }
    if (this.options.resume && !this.resumed) await this.resume();
    const queues = this.options.queues ?? (await listQueues(this.redis, this.keys));
    const figures = await readFigures(this.redis, this.keys, queues, this.options.windowMs ?? 300_000, now);
    const repeatMs = this.options.repeatIntervalMs ?? 3_600_000;
    const events: AlertEvent[] = [];
    const judged = [...figures.queues.map((state) => [state, "queue"] as const), [figures.wide, "fleet"] as const];
    for (const [state, scope] of judged) {
      for (const rule of this.rules) {
        if (((rule.scope ?? "queue") === "queue") !== (scope === "queue")) continue;
        const id = `${rule.name}:${state.queue}`;
        const verdict = rule.check(state);
        const current = this.firing.get(id);
        if (!verdict?.firing) this.pending.delete(id);
        if (verdict?.firing) {
          if (!current) {
            const since = this.pending.get(id) ?? now;
            if (now - since < (rule.forMs ?? 0)) {
              this.pending.set(id, since);
              continue;
            }
            this.pending.delete(id);
            const event: AlertEvent = {
              id,
              rule: rule.name,
              severity: rule.severity,
              state: "firing",
              queue: state.queue,
              ...pick(verdict),
              since,
              at: now,
            };
            this.firing.set(id, { event, lastSent: now });
            events.push(event);
          } else {
            current.event = { ...current.event, ...pick(verdict), at: now };
            if (now - current.lastSent >= repeatMs) {
              current.lastSent = now;
              events.push(current.event);
            }
          }
        } else if (current && verdict !== undefined) {
          this.firing.delete(id);
          events.push({ ...current.event, state: "resolved", ...(verdict && pick(verdict)), at: now });
        }
      }
    }
    for (const event of events) {
      for (const sink of this.options.sinks) {
        try {
          await sink(event);
        } catch (err) {
          this.options.onError?.(err);
        }
      }
    }
    const firing = this.active;
    for (const sink of this.options.sinks) {
      try {
        await sink.refresh?.(firing, 3 * (this.options.intervalMs ?? 15_000));
      } catch (err) {
        this.options.onError?.(err);
      }
    }
    return events;
  }
}

const pick = (v: RuleVerdict) => ({ message: v.message, value: v.value, threshold: v.threshold });
