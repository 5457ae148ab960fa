import type { Broker } from "@flotilla/broker";
import type { Keys, Logger } from "@flotilla/core";
import type { RedisMemory } from "@flotilla/core/redis";
import { countLiveWorkers, deadAfter } from "@flotilla/health";
import type { FlotillaMetrics, QueueFigures } from "@flotilla/metrics";
import type { Redis } from "ioredis";

/**
 * The worker's gauges (queue depth and pending per queue, live workers, Redis's memory), read from
 * Redis on a timer and handed to the metrics' observable callbacks. The live-worker count is one
 * ZCOUNT; Redis's memory is what the link's probe last read, at no cost of its own.
 */
export class Gauges {
  private readonly redis: Redis;
  private readonly keys: Keys;
  private readonly broker: Broker;
  private readonly queues: readonly string[];
  private readonly metrics: FlotillaMetrics;
  private readonly heartbeatTtlMs: number;
  private readonly log: Logger;
  private figures: QueueFigures[] = [];
  private liveWorkers: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private stopObserving: Array<() => void> = [];

  constructor(redis: Redis, keys: Keys, broker: Broker, queues: readonly string[], metrics: FlotillaMetrics, heartbeatTtlMs: number, log: Logger) {
    this.redis = redis;
    this.keys = keys;
    this.broker = broker;
    this.queues = queues;
    this.metrics = metrics;
    this.heartbeatTtlMs = heartbeatTtlMs;
    this.log = log;
  }

  /** `memory`: Redis's memory as the worker's link last read it (every second). */
  start(intervalMs: number, memory: () => RedisMemory | undefined = () => undefined): void {
    this.stopObserving = [
      this.metrics.observeQueues(() => this.figures),
      this.metrics.observeWorkers(() => this.liveWorkers),
      this.metrics.observeRedisMemory(memory),
    ];
    void this.read();
    this.timer = setInterval(() => void this.read(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    for (const stop of this.stopObserving) stop();
    this.stopObserving = [];
  }

  private async read(): Promise<void> {
    try {
      const figures: QueueFigures[] = [];
      for (const queue of this.queues) {
        const d = await this.broker.depth(queue);
        figures.push({ queue, waiting: d.waiting + d.delayed, inFlight: d.inFlight, oldestWaitMs: d.oldestWaitMs });
      }
      this.figures = figures;
      this.liveWorkers = await countLiveWorkers(this.redis, this.keys, deadAfter(this.heartbeatTtlMs));
    } catch (err) {
      this.log.debug("could not read the gauges", { err });
    }
  }
}
