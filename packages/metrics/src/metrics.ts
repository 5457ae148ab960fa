import type { RedisMemory } from "@flotilla/core/redis";
import { type Attributes, type Meter, type MeterProvider, metrics } from "@opentelemetry/api";

/** Every instrument Flotilla records, by name. */
export const METRICS = {
  submitted: "flotilla.tasks.submitted",
  completed: "flotilla.tasks.completed",
  failed: "flotilla.tasks.failed",
  cancelled: "flotilla.tasks.cancelled",
  retried: "flotilla.tasks.retried",
  deadLettered: "flotilla.tasks.dead_lettered",
  selfFenced: "flotilla.tasks.self_fenced",
  queueDepth: "flotilla.queue.depth",
  queueOldestWait: "flotilla.queue.oldest_wait",
  queuePending: "flotilla.queue.pending",
  duration: "flotilla.task.duration",
  waitTime: "flotilla.task.wait_time",
  workersLive: "flotilla.workers.live",
  redisMemoryUsed: "flotilla.redis.memory.used",
  redisMemoryMax: "flotilla.redis.memory.max",
  eventsEmitted: "flotilla.stream.events.emitted",
  publishDuration: "flotilla.stream.event.publish_duration",
  graphRunDuration: "flotilla.graph.run.duration",
  graphNodeDuration: "flotilla.graph.node.duration",
  busPublished: "flotilla.bus.published",
  busDelivered: "flotilla.bus.delivered",
  busAcked: "flotilla.bus.acked",
  busRetried: "flotilla.bus.retried",
  busReclaimed: "flotilla.bus.reclaimed",
  busDeadLettered: "flotilla.bus.dead_lettered",
  busHandleDuration: "flotilla.bus.handle.duration",
  busLag: "flotilla.bus.lag",
  busPending: "flotilla.bus.pending",
} as const;

/**
 * Bucket boundaries of the duration histograms, in seconds (the unit Prometheus and OpenTelemetry
 * use for durations). OpenTelemetry's default boundaries (0 to 10,000) suit milliseconds: in
 * seconds every task would land in the first bucket.
 */
export const DURATION_BUCKETS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
/** The instruments in seconds (unit `s`): the duration histograms, and the queues' oldest wait. */
export const SECONDS_METRICS: readonly string[] = [
  METRICS.queueOldestWait,
  METRICS.duration,
  METRICS.waitTime,
  METRICS.publishDuration,
  METRICS.graphRunDuration,
  METRICS.graphNodeDuration,
  METRICS.busHandleDuration,
];
/** Publishing a batch of events takes milliseconds: finer buckets, in seconds. */
export const PUBLISH_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

export interface HistogramSummary {
  count: number;
  sum: number;
  min: number;
  max: number;
  p50: number;
  p95: number;
  p99: number;
}

/** The figures as this process recorded them: counters and histograms (durations in seconds) by attribute set, gauges as last observed. */
export interface MetricsSnapshot {
  counters: Record<string, Record<string, number>>;
  gauges: Record<string, Record<string, number>>;
  histograms: Record<string, Record<string, HistogramSummary>>;
}

/** One subscriber group's backlog on a topic, for the bus gauges. */
export interface BusGroupFigures {
  topic: string;
  group: string;
  /** Entries of the topic not yet delivered to the group. */
  lag: number;
  /** Entries delivered to the group and not yet settled (in progress or waiting for a retry). */
  pending: number;
}

export interface QueueFigures {
  queue: string;
  /** Entries waiting to be claimed (delayed ones included). */
  waiting: number;
  /** Claimed, not yet done. */
  inFlight: number;
  /** How long the oldest waiting entry has waited (ms; 0 when none waits). @default 0 */
  oldestWaitMs?: number;
}

/** A stable key for an attribute set: `queue=a,agent=b` (sorted). */
export const attributeKey = (attrs: Attributes = {}): string => {
  // Built in one string, no intermediate arrays: it runs several times for every task a worker ends.
  const keys = Object.keys(attrs);
  if (keys.length > 1) keys.sort();
  let key = "";
  for (let i = 0; i < keys.length; i++) key += `${i === 0 ? "" : ","}${keys[i]}=${String(attrs[keys[i]!])}`;
  return key;
};

const SAMPLE_LIMIT = 10_000;

class Samples {
  count = 0;
  sum = 0;
  min = Number.POSITIVE_INFINITY;
  max = Number.NEGATIVE_INFINITY;
  private readonly values: number[] = [];
  private next = 0;

  add(v: number): void {
    this.count++;
    this.sum += v;
    this.min = Math.min(this.min, v);
    this.max = Math.max(this.max, v);
    // The latest SAMPLE_LIMIT values, for percentiles.
    if (this.values.length < SAMPLE_LIMIT) this.values.push(v);
    else this.values[this.next++ % SAMPLE_LIMIT] = v;
  }

  summary(): HistogramSummary {
    const sorted = [...this.values].sort((a, b) => a - b);
    const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    return { count: this.count, sum: this.sum, min: this.count ? this.min : 0, max: this.count ? this.max : 0, p50: at(0.5), p95: at(0.95), p99: at(0.99) };
  }
}

export interface FlotillaMetricsOptions {
  /** Where instruments are created. @default the global MeterProvider (`metrics.getMeterProvider()`) */
  meterProvider?: MeterProvider;
}

/**
 * Flotilla's instruments, created through `@opentelemetry/api`: they flow into whatever OpenTelemetry
 * SDK the application registered (register it before creating clients and workers, as OTel asks).
 * Every figure is also kept in memory, so `snapshot()` reads the same numbers with no SDK at all.
 */
export class FlotillaMetrics {
  private readonly meter: Meter;
  private readonly counters = new Map<string, Map<string, number>>();
  private readonly histograms = new Map<string, Map<string, Samples>>();
  private readonly otelCounters = new Map<string, ReturnType<Meter["createCounter"]>>();
  private readonly otelHistograms = new Map<string, ReturnType<Meter["createHistogram"]>>();
  private readonly queueSources = new Set<() => readonly QueueFigures[]>();
  private readonly workerSources = new Set<() => number | undefined>();
  private readonly memorySources = new Set<() => RedisMemory | undefined>();
  private readonly busSources = new Set<() => readonly BusGroupFigures[]>();

  constructor(options: FlotillaMetricsOptions = {}) {
    this.meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter("@flotilla/metrics");
    const counter = (name: string, description: string, unit = "{task}") => this.otelCounters.set(name, this.meter.createCounter(name, { description, unit }));
    counter(METRICS.submitted, "Tasks submitted");
    counter(METRICS.completed, "Tasks that completed");
    counter(METRICS.failed, "Tasks that failed for good");
    counter(METRICS.cancelled, "Tasks cancelled");
    counter(METRICS.retried, "Attempts that ended in a retry");
    counter(METRICS.deadLettered, "Queue entries moved to the dead-letter stream", "{entry}");
    counter(METRICS.selfFenced, "Runs a worker stopped itself because it could not renew their lease in time (Redis out of reach)", "{run}");
    counter(METRICS.eventsEmitted, "Task events published", "{event}");
    // Durations in seconds, as Prometheus and OpenTelemetry's conventions have them.
    const histogram = (name: string, description: string, buckets: readonly number[]) =>
      this.otelHistograms.set(name, this.meter.createHistogram(name, { description, unit: "s", advice: { explicitBucketBoundaries: [...buckets] } }));
    histogram(METRICS.duration, "How long a task's attempt ran", DURATION_BUCKETS);
    histogram(METRICS.waitTime, "How long a task waited in its queue before it first started", DURATION_BUCKETS);
    histogram(METRICS.publishDuration, "How long a batch of events took to publish", PUBLISH_BUCKETS);
    histogram(METRICS.graphRunDuration, "How long a graph run took, start to end", DURATION_BUCKETS);
    histogram(METRICS.graphNodeDuration, "How long a graph node's attempt ran", DURATION_BUCKETS);
    counter(METRICS.busPublished, "Bus events published", "{event}");
    counter(METRICS.busDelivered, "Bus events delivered to a subscriber group's consumer (first deliveries and redeliveries)", "{event}");
    counter(METRICS.busAcked, "Bus events a subscriber group settled", "{event}");
    counter(METRICS.busRetried, "Bus deliveries that failed and wait to be delivered again", "{event}");
    counter(METRICS.busReclaimed, "Bus deliveries taken over from a consumer whose lease lapsed", "{event}");
    counter(METRICS.busDeadLettered, "Bus events moved to a subscriber group's dead letters", "{event}");
    histogram(METRICS.busHandleDuration, "How long a bus event's handler ran", DURATION_BUCKETS);
    const lag = this.meter.createObservableGauge(METRICS.busLag, { description: "Topic entries not yet delivered to the group", unit: "{event}" });
    const busPending = this.meter.createObservableGauge(METRICS.busPending, {
      description: "Events delivered to the group and not yet settled",
      unit: "{event}",
    });
    lag.addCallback((r) => {
      for (const g of this.busFigures()) r.observe(g.lag, { topic: g.topic, group: g.group });
    });
    busPending.addCallback((r) => {
      for (const g of this.busFigures()) r.observe(g.pending, { topic: g.topic, group: g.group });
    });
    const depth = this.meter.createObservableGauge(METRICS.queueDepth, { description: "Entries waiting in the queue", unit: "{entry}" });
    const pending = this.meter.createObservableGauge(METRICS.queuePending, { description: "Entries claimed and in flight", unit: "{entry}" });
    const live = this.meter.createObservableGauge(METRICS.workersLive, { description: "Workers with a live heartbeat", unit: "{worker}" });
    depth.addCallback((r) => {
      for (const q of this.queueFigures()) r.observe(q.waiting, { queue: q.queue });
    });
    pending.addCallback((r) => {
      for (const q of this.queueFigures()) r.observe(q.inFlight, { queue: q.queue });
    });
    const oldest = this.meter.createObservableGauge(METRICS.queueOldestWait, {
      description: "How long the queue's oldest waiting entry has waited: its lag, for autoscaling",
      unit: "s",
    });
    oldest.addCallback((r) => {
      for (const q of this.queueFigures()) r.observe((q.oldestWaitMs ?? 0) / 1000, { queue: q.queue });
    });
    live.addCallback((r) => {
      const n = this.liveWorkers();
      if (n !== undefined) r.observe(n);
    });
    const used = this.meter.createObservableGauge(METRICS.redisMemoryUsed, { description: "Memory Redis uses (INFO used_memory)", unit: "By" });
    const max = this.meter.createObservableGauge(METRICS.redisMemoryMax, { description: "Redis's maxmemory (0: no limit)", unit: "By" });
    used.addCallback((r) => {
      const m = this.redisMemory();
      if (m) r.observe(m.usedBytes);
    });
    max.addCallback((r) => {
      const m = this.redisMemory();
      if (m) r.observe(m.maxBytes);
    });
  }

  /** Adds to a counter (one of METRICS). */
  add(name: string, value: number, attrs: Attributes = {}): void {
    this.otelCounters.get(name)?.add(value, attrs);
    let byAttrs = this.counters.get(name);
    if (!byAttrs) {
      byAttrs = new Map<string, number>();
      this.counters.set(name, byAttrs);
    }
    const key = attributeKey(attrs);
    byAttrs.set(key, (byAttrs.get(key) ?? 0) + value);
  }

  /** Records a histogram value (one of METRICS): a duration, in seconds. */
  record(name: string, value: number, attrs: Attributes = {}): void {
    this.otelHistograms.get(name)?.record(value, attrs);
    let byAttrs = this.histograms.get(name);
    if (!byAttrs) {
      byAttrs = new Map<string, Samples>();
      this.histograms.set(name, byAttrs);
    }
    const key = attributeKey(attrs);
    let samples = byAttrs.get(key);
    if (!samples) {
      samples = new Samples();
      byAttrs.set(key, samples);
    }
    samples.add(value);
  }

  /** Queue figures for the depth and pending gauges; returns the function that stops observing. */
  observeQueues(source: () => readonly QueueFigures[]): () => void {
    this.queueSources.add(source);
    return () => this.queueSources.delete(source);
  }

  /** Subscriber groups' lag and pending counts for the bus gauges; returns the function that stops observing. */
  observeBus(source: () => readonly BusGroupFigures[]): () => void {
    this.busSources.add(source);
    return () => this.busSources.delete(source);
  }

  private busFigures(): BusGroupFigures[] {
    return [...this.busSources].flatMap((s) => s());
  }

  /** The live-worker count for its gauge; returns the function that stops observing. */
  observeWorkers(source: () => number | undefined): () => void {
    this.workerSources.add(source);
    return () => this.workerSources.delete(source);
  }

  /** Redis's memory for its gauges (a worker's probe reads it every second); returns the function that stops observing. */
  observeRedisMemory(source: () => RedisMemory | undefined): () => void {
    this.memorySources.add(source);
    return () => this.memorySources.delete(source);
  }

  private redisMemory(): RedisMemory | undefined {
    for (const s of this.memorySources) {
      const m = s();
      if (m) return m;
    }
    return undefined;
  }

  private queueFigures(): QueueFigures[] {
    return [...this.queueSources].flatMap((s) => s());
  }

  private liveWorkers(): number | undefined {
    for (const s of this.workerSources) {
      const n = s();
      if (n !== undefined) return n;
    }
    return undefined;
  }

  snapshot(): MetricsSnapshot {
    const counters: MetricsSnapshot["counters"] = {};
    for (const [name, byAttrs] of this.counters) counters[name] = Object.fromEntries(byAttrs);
    const histograms: MetricsSnapshot["histograms"] = {};
    for (const [name, byAttrs] of this.histograms) histograms[name] = Object.fromEntries([...byAttrs].map(([k, s]) => [k, s.summary()]));
    const gauges: MetricsSnapshot["gauges"] = { [METRICS.queueDepth]: {}, [METRICS.queuePending]: {}, [METRICS.queueOldestWait]: {} };
    for (const q of this.queueFigures()) {
      gauges[METRICS.queueDepth]![attributeKey({ queue: q.queue })] = q.waiting;
      gauges[METRICS.queuePending]![attributeKey({ queue: q.queue })] = q.inFlight;
      gauges[METRICS.queueOldestWait]![attributeKey({ queue: q.queue })] = (q.oldestWaitMs ?? 0) / 1000;
    }
    const bus = this.busFigures();
    if (bus.length > 0) {
      const lag: Record<string, number> = {};
      const pending: Record<string, number> = {};
      for (const g of bus) {
        const key = attributeKey({ topic: g.topic, group: g.group });
        lag[key] = g.lag;
        pending[key] = g.pending;
      }
      gauges[METRICS.busLag] = lag;
      gauges[METRICS.busPending] = pending;
    }
    const live = this.liveWorkers();
    if (live !== undefined) gauges[METRICS.workersLive] = { "": live };
    const memory = this.redisMemory();
    if (memory) {
      gauges[METRICS.redisMemoryUsed] = { "": memory.usedBytes };
      gauges[METRICS.redisMemoryMax] = { "": memory.maxBytes };
    }
    return { counters, gauges, histograms };
  }

  /** The total of a counter over every attribute set, or those matching `attrs`. */
  total(name: string, attrs: Attributes = {}): number {
    const want = Object.entries(attrs).map(([k, v]) => `${k}=${String(v)}`);
    let sum = 0;
    for (const [key, value] of this.counters.get(name) ?? []) {
      const parts = key.split(",");
      if (want.every((w) => parts.includes(w))) sum += value;
    }
    return sum;
  }
}

let shared: FlotillaMetrics | undefined;

/** The instance clients and workers use when given none: one per process, on the global MeterProvider. */
export function defaultMetrics(): FlotillaMetrics {
  shared ??= new FlotillaMetrics();
  return shared;
}
