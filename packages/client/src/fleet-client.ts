import type { QueueDepth } from "@flotilla/broker";
import { parseInput, QueueNameSchema } from "@flotilla/core";
import { withRedis } from "@flotilla/core/redis";
import { type FleetStatus, type FleetStatusOptions, getFleetStatus } from "@flotilla/health";
import { type AlertEvent, AlertManager, type AlertManagerOptions, type AlertSink, readAlerts, redisStreamSink } from "@flotilla/metrics";
import { listQueues, readQueueStats } from "@flotilla/store";
import type { ClientContext } from "./context.ts";

export type { QueueDepth };

/** What `fleet.runAlerts` takes: the AlertManager's options but the connection, and sinks beside the alert stream. */
export type RunAlertsOptions = Omit<AlertManagerOptions, "redis" | "prefix" | "sinks"> & {
  /** Sinks beside the alert stream (a log line, a webhook). @default [] */
  sinks?: AlertSink[];
};

/** A queue at a glance: its depth (waiting by lane, in flight, delayed, dead, oldest wait) and what its tasks came to lately. */
export interface QueueOverview extends QueueDepth {
  queue: string;
  /** Outcomes recorded over the last `windowMs` (the fleet's statistics), and that window. */
  recent: { completed: number; failed: number; cancelled: number; retried: number; windowMs: number };
  /** 95th percentile of how long its tasks waited before they first started, over that window (ms; undefined: none started). */
  waitP95Ms: number | undefined;
  /**
   * Live workers serving the queue now (their heartbeats list it, or the graph node type it is the
   * queue of). 0 with tasks waiting: nothing will start them until a worker serving it joins.
   */
  workers: number;
}

/** `client.fleet`: the workers and the queues they serve. */
export class FleetClient {
  private readonly ctx: ClientContext;

  constructor(ctx: ClientContext) {
    this.ctx = ctx;
  }

  /** Live workers with their figures, and workers that stopped beating as dead. */
  async status(options: FleetStatusOptions = {}): Promise<FleetStatus> {
    return withRedis(this.ctx.redis, () => getFleetStatus(this.ctx.redis, this.ctx.keys, options));
  }

  /**
   * Every queue tasks were submitted to, sorted, each with its depth and its recent outcomes (over
   * the last `windowMs`, from the statistics the workers' scripts count).
   */
  async queues(options: { windowMs?: number } = {}): Promise<QueueOverview[]> {
    const windowMs = options.windowMs ?? 60_000;
    const { redis, keys, broker } = this.ctx;
    return withRedis(redis, async () => {
      const [names, fleet] = await Promise.all([listQueues(redis, keys), getFleetStatus(redis, keys)]);
      const served = new Map<string, number>();
      for (const w of fleet.workers) {
        if (!w.alive) continue;
        for (const q of new Set([...(w.queues ?? []), ...(w.nodeTypes ?? []).map((t) => `node.${t}`)])) served.set(q, (served.get(q) ?? 0) + 1);
      }
      return Promise.all(
        names.map(async (queue) => {
          const [depth, stats] = await Promise.all([broker.depth(queue), readQueueStats(redis, keys, queue, windowMs)]);
          const { waitP95Ms, ...recent } = stats;
          return { queue, ...depth, recent: { ...recent, windowMs }, waitP95Ms, workers: served.get(queue) ?? 0 };
        }),
      );
    });
  }

  /**
   * The fleet's alerts as its workers' `redisStreamSink` keeps them: the latest `count` events, newest
   * first, and those firing now (per rule and queue, the latest event says firing).
   */
  async alerts(options: { count?: number } = {}): Promise<{ events: AlertEvent[]; firing: AlertEvent[] }> {
    return withRedis(this.ctx.redis, () => readAlerts(this.ctx.redis, this.ctx.keys, options));
  }

  /**
   * Starts evaluating alert rules against this fleet on this client's connection (stopped by the
   * manager's `stop()`): the default rules unless `rules` is given, each event kept in the alert
   * stream that `alerts()` reads, and sent to `sinks`. `exclusive` and `resume` default to true here,
   * so any number of processes may run it (the gateway does by default): one evaluates at a time, and
   * a restart or hand-over neither repeats an alert nor forgets to resolve one.
   */
  runAlerts(options: RunAlertsOptions = {}): AlertManager {
    const { redis, keys } = this.ctx;
    const manager = new AlertManager({
      exclusive: true,
      resume: true,
      ...options,
      redis,
      prefix: keys.prefix,
      sinks: [redisStreamSink(redis, { prefix: keys.prefix }), ...(options.sinks ?? [])],
    });
    manager.start();
    return manager;
  }

  /** Waiting (by lane), in-flight, delayed and dead entries of a queue, and how long its oldest waiting entry has waited. */
  async queueDepth(queue = "default"): Promise<QueueDepth> {
    const q = parseInput(QueueNameSchema, queue, "queue");
    return withRedis(this.ctx.redis, () => this.ctx.broker.depth(q));
  }
}
