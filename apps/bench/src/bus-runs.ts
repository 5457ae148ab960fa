// The bus scenario's measurements, each run the same way for @flotilla/bus and for its peer, plain
// ioredis on Redis Streams: publish rates from one process, and one end-to-end run (consumer
// processes in 3 groups, a burst and then a steady rate of events).
import { Bus } from "@flotilla/bus";
import { createKeys, type JsonValue } from "@flotilla/core";
import { Redis } from "ioredis";
import { type BusBenchPayload, collectSamples, now } from "./bus-samples.ts";
import { callsPer } from "./graph-runs.ts";
import { newAdmin, percentiles, startWorkers } from "./harness.ts";

export type BusSystem = "flotilla" | "plain";

/** Writes the scenario's events: `@flotilla/bus` (`publish` / `publishMany`) or plain `XADD` (single / pipelined). */
export interface BusTarget {
  /** Where events of `name` go: a topic (the bus) or a stream key (plain). */
  readonly stream: (name: string) => string;
  one(name: string, payload: BusBenchPayload): Promise<unknown>;
  /** Publishes in one round trip; returns the ids in order. */
  many(name: string, payloads: BusBenchPayload[]): Promise<string[]>;
  close(): Promise<void>;
}

export function busTarget(url: string, prefix: string): BusTarget {
  const bus = new Bus({ redis: url, prefix });
  const keys = createKeys(prefix);
  return {
    stream: (topic) => keys.topic(topic),
    one: (topic, payload) => bus.publish(topic, payload as JsonValue),
    many: (topic, payloads) => bus.publishMany(payloads.map((payload) => ({ topic, payload: payload as JsonValue }))),
    close: () => bus.close(),
  };
}

export function plainTarget(url: string, prefix: string): BusTarget {
  const redis = new Redis(url);
  const key = (name: string) => `${prefix}:stream:${name}`;
  return {
    stream: key,
    one: (name, payload) => redis.xadd(key(name), "*", "d", JSON.stringify(payload)),
    async many(name, payloads) {
      const pipeline = redis.pipeline();
      for (const p of payloads) pipeline.xadd(key(name), "*", "d", JSON.stringify(p));
      return ((await pipeline.exec()) ?? []).map(([err, id]) => {
        if (err) throw err;
        return id as string;
      });
    },
    close: async () => {
      redis.disconnect();
    },
  };
}

/** One INFO ALL: calls of each command (scripts' inner calls included), their sum without INFO itself, Redis's CPU µs. */
export async function snapshot(admin: Redis): Promise<{ stats: Map<string, [number, number]>; calls: number; cpuMicros: number }> {
  const info = (await admin.info("all")) as string;
  const stats = new Map<string, [number, number]>();
  let calls = 0;
  for (const m of info.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) {
    stats.set(m[1]!, [Number(m[2]), Number(m[3])]);
    if (m[1] !== "info") calls += Number(m[2]);
  }
  const seconds = (name: string) => Number(new RegExp(`${name}:([\\d.]+)`).exec(info)?.[1] ?? 0);
  return { stats, calls, cpuMicros: (seconds("used_cpu_user") + seconds("used_cpu_sys")) * 1e6 };
}

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;
/** `n` events of a phase; `stamped`: each carries the publisher's clock at the call (`t`). */
const payloads = (phase: string, from: number, n: number, stamped = false): BusBenchPayload[] => {
  const t = stamped ? now() : undefined;
  return Array.from({ length: n }, (_, j) => ({ phase, i: from + j, ...(t !== undefined && { t }) }));
};

export type PublishMode = "single" | "concurrent" | "batched";
export type PublishFigures = { perSec: number; rounds: number[]; commandsPerEvent: number; redisCpuMicrosPerEvent: number; clientCpuMicrosPerEvent: number };

/**
 * Events/s and Redis commands per event of `publish` one at a time, `inFlight` at once, and
 * batches of `batch`, for each target. Each mode runs `rounds` times, the targets taking turns
 * (round-trip-bound rates swing by 3× between runs on a shared machine as the scheduler places the
 * processes); the median round is the figure.
 */
export async function publishRates(
  targets: Record<BusSystem, BusTarget>,
  admin: Redis,
  counts: { single: number; inFlight: number; batched: number; batch: number; rounds: number },
): Promise<Record<PublishMode, Record<BusSystem, PublishFigures>>> {
  const runs: Record<PublishMode, (target: BusTarget) => Promise<void>> = {
    single: async (target) => {
      for (let i = 0; i < counts.single; i++) await target.one("single", { phase: "single", i });
    },
    concurrent: async (target) => {
      let next = 0;
      await Promise.all(
        Array.from({ length: counts.inFlight }, async () => {
          while (next < counts.single) await target.one("concurrent", { phase: "concurrent", i: next++ });
        }),
      );
    },
    batched: async (target) => {
      for (let i = 0; i < counts.batched; i += counts.batch) await target.many("batched", payloads("batched", i, Math.min(counts.batch, counts.batched - i)));
    },
  };
  const systems = Object.keys(targets) as BusSystem[];
  // Warm: connections, scripts loaded, code paths compiled.
  for (const system of systems) {
    for (let i = 0; i < 200; i++) await targets[system].one("warm", { phase: "warm", i });
    await targets[system].many("warm", payloads("warm", 0, counts.batch));
  }
  const out = {} as Record<PublishMode, Record<BusSystem, PublishFigures>>;
  for (const mode of ["single", "concurrent", "batched"] as const) {
    const events = mode === "batched" ? counts.batched : counts.single;
    const rounds = Object.fromEntries(systems.map((s) => [s, { rates: [] as number[], calls: 0, redisCpu: 0, clientCpu: 0 }]));
    for (let r = 0; r < counts.rounds; r++) {
      for (const system of systems) {
        const before = await snapshot(admin);
        const cpu = process.cpuUsage();
        const t = performance.now();
        await runs[mode](targets[system]);
        const seconds = (performance.now() - t) / 1000;
        const used = process.cpuUsage(cpu);
        const after = await snapshot(admin);
        const figures = rounds[system]!;
        figures.rates.push(Math.round(events / seconds));
        figures.calls += after.calls - before.calls;
        figures.redisCpu += after.cpuMicros - before.cpuMicros;
        figures.clientCpu += used.user + used.system;
        await admin.del(targets[system].stream(mode));
      }
    }
    out[mode] = Object.fromEntries(
      systems.map((s) => {
        const { rates, calls, redisCpu, clientCpu } = rounds[s]!;
        const sorted = [...rates].sort((a, b) => a - b);
        const all = events * counts.rounds;
        return [
          s,
          {
            perSec: sorted[Math.floor(sorted.length / 2)]!,
            rounds: rates,
            commandsPerEvent: round(calls / all),
            redisCpuMicrosPerEvent: round(redisCpu / all, 1),
            clientCpuMicrosPerEvent: round(clientCpu / all, 1),
          },
        ];
      }),
    ) as Record<BusSystem, PublishFigures>;
  }
  for (const system of systems) await admin.del(targets[system].stream("warm"));
  return out;
}

export interface EndToEndOptions {
  /** Consumer processes; each serves every group (one consumer in each). */
  procs: number;
  groups: readonly string[];
  /** Events a consumer handles at once per group (the bus's `concurrency`; the plain consumer's `COUNT`). */
  concurrency: number;
  /** Events of the burst: published in batches of `batch` as fast as one process can. */
  burst: number;
  batch: number;
  /** Events of the steady phase, published at `rate` events/s (a batch of what is due every few ms). */
  steady: number;
  rate: number;
  /** How long the consumers are watched idle (nothing published) for their background commands. */
  idleMs: number;
}

let runs = 0;

/**
 * One end-to-end run: `procs` consumer processes, each a consumer in every group of one topic; 200
 * events to warm up; `idleMs` with nothing published (the consumers' background commands/s); the
 * burst (delivered events/s from the first publish to the last handled event, Redis commands and
 * CPU per delivery); then the steady phase (publish → handler latency at a rate the consumers keep
 * up with). The handlers record Date.now() − the event's publish time (its
 * id's ms) and report their samples when they are stopped. Done is known from XINFO GROUPS (every
 * group delivered the last id, nothing pending), polled every 10 ms; those polls are left out of the
 * command counts.
 */
export async function endToEnd(url: string, system: BusSystem, o: EndToEndOptions) {
  const prefix = `bench-bus-${system}-${++runs}`;
  const topic = "bench.events";
  const samplesKey = `${prefix}:samples`;
  const target = system === "flotilla" ? busTarget(url, prefix) : plainTarget(url, prefix);
  const stream = target.stream(topic);
  const admin = newAdmin(url);
  const stop = await startWorkers(
    system === "flotilla" ? "flotilla" : "redis",
    o.procs,
    {
      REDIS_URL: url,
      BENCH_PREFIX: prefix,
      BENCH_TOPIC: topic,
      BENCH_STREAM: stream,
      BENCH_GROUPS: o.groups.join(","),
      BENCH_CONCURRENCY: String(o.concurrency),
      BENCH_SAMPLES_KEY: samplesKey,
    },
    system === "flotilla" ? "bus-worker" : "stream-worker",
  );
  let polls = 0;
  const drained = async (lastId: string, timeoutMs = 120_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      polls++;
      const groups = ((await admin.xinfo("GROUPS", stream)) as unknown[][]).map((flat) => {
        const g: Record<string, unknown> = {};
        for (let i = 0; i + 1 < flat.length; i += 2) g[String(flat[i])] = flat[i + 1];
        return g;
      });
      const done = o.groups.every((name) => groups.some((g) => g.name === name && g["last-delivered-id"] === lastId && Number(g.pending) === 0));
      if (done) return;
      if (Date.now() > deadline) throw new Error(`${system}: the groups did not drain ${stream} within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 10));
    }
  };
  /** Redis commands, Redis CPU, the consumers' CPU and this (publishing) process's CPU of a phase, per delivery. */
  const phase = async (deliveries: number, run: () => Promise<string>) => {
    const before = await snapshot(admin);
    const procsCpu = stop.cpuSeconds();
    const ownCpu = process.cpuUsage();
    polls = 0;
    const startedAt = Date.now();
    const lastId = await run();
    const publishedAt = Date.now();
    await drained(lastId);
    const own = process.cpuUsage(ownCpu);
    const after = await snapshot(admin);
    const xinfo = after.stats.get("xinfo|groups");
    if (xinfo) xinfo[0] -= polls;
    return {
      startedAt,
      publishSeconds: round((publishedAt - startedAt) / 1000, 3),
      commandsPerDelivery: round((after.calls - before.calls - polls) / deliveries),
      commandsPerDeliveryByCommand: callsPer(before.stats, after.stats, deliveries),
      redisCpuMicrosPerDelivery: round((after.cpuMicros - before.cpuMicros) / deliveries, 1),
      consumersCpuMicrosPerDelivery: round(((stop.cpuSeconds() - procsCpu) * 1e6) / deliveries, 1),
      publisherCpuMicrosPerDelivery: round((own.user + own.system) / deliveries, 1),
    };
  };
  const groups = o.groups.length;

  const warm = await target.many(topic, payloads("warm", 0, 200));
  await drained(warm.at(-1)!);

  // Idle: what the consumers ask of Redis with nothing to deliver (blocking reads, upkeep, heartbeats).
  const idleBefore = await snapshot(admin);
  const idleStart = performance.now();
  await new Promise((r) => setTimeout(r, o.idleMs));
  const idleSeconds = (performance.now() - idleStart) / 1000;
  const idleAfter = await snapshot(admin);
  const idle = {
    seconds: round(idleSeconds, 2),
    commandsPerSec: round((idleAfter.calls - idleBefore.calls) / idleSeconds, 1),
    commandsPerSecByCommand: callsPer(idleBefore.stats, idleAfter.stats, idleSeconds),
  };

  const burst = await phase(o.burst * groups, async () => {
    let last = "";
    for (let i = 0; i < o.burst; i += o.batch) last = (await target.many(topic, payloads("burst", i, Math.min(o.batch, o.burst - i), true))).at(-1)!;
    return last;
  });

  const steady = await phase(o.steady * groups, async () => {
    const t = performance.now();
    let sent = 0;
    let last = "";
    while (sent < o.steady) {
      const due = Math.min(o.steady, Math.floor(((performance.now() - t) / 1000) * o.rate) + 1);
      if (due > sent) {
        last = (await target.many(topic, payloads("steady", sent, due - sent, true))).at(-1)!;
        sent = due;
      } else {
        await new Promise((r) => setTimeout(r, 1));
      }
    }
    return last;
  });

  await stop();
  const samples = await collectSamples(admin, samplesKey);
  // The bus's own counters, against what the handlers saw.
  const counters = system === "flotilla" ? await busCounters(url, prefix, topic) : undefined;
  await target.close();
  await admin.del(stream, samplesKey);
  admin.disconnect();

  const handled = (name: string, expected: number) => {
    const s = samples[name];
    if (!s || s.handled < expected) throw new Error(`${system}: ${s?.handled ?? 0} ${name} events handled, expected ${expected} (${groups} groups)`);
    return s;
  };
  const b = handled("burst", o.burst * groups);
  const s = handled("steady", o.steady * groups);
  const { startedAt: burstStart, ...burstFigures } = burst;
  const { startedAt: _steadyStart, publishSeconds, ...steadyFigures } = steady;
  return {
    burst: {
      deliveredPerSec: Math.round(b.handled / ((b.lastAt - burstStart) / 1000)),
      seconds: round((b.lastAt - burstStart) / 1000, 3),
      handled: b.handled,
      ...burstFigures,
      // Mostly the backlog's wait: the burst is published faster than it is consumed.
      latencyMs: percentiles(b.latencies),
      callToHandlerMs: percentiles(b.fromCall),
    },
    steady: {
      handled: s.handled,
      publishSeconds,
      latencyMs: percentiles(s.latencies),
      callToHandlerMs: percentiles(s.fromCall),
      ...steadyFigures,
    },
    idle,
    ...(counters && { busCounters: counters }),
  };
}

/** The bus's own counters of a topic, through its reader (`stats()`): published, and each group's counts. */
async function busCounters(url: string, prefix: string, topic: string): Promise<Record<string, number>> {
  const reader = new Bus({ redis: url, prefix });
  try {
    const [stats] = await reader.stats(topic);
    if (!stats) return {};
    return Object.fromEntries([
      ["published", stats.published],
      ...stats.groups.flatMap((g) => Object.entries(g.counts).map(([name, n]) => [`${g.name}:${name}`, n])),
    ]);
  } finally {
    await reader.close();
  }
}
