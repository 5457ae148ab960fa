// The tokens scenario's figures from one run's samples: every process's columns joined token by
// token (see tokens-samples.ts), then latencies, delivery counts, rates and the follower tallies.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type Column, FOLLOWER_COLUMNS, mergeColumns, readColumn, WORKER_COLUMNS } from "./tokens-samples.ts";

const round = (x: number, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

export interface Spread {
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
  samples: number;
}

/** Percentiles (nearest rank), max and mean of `values`, in their unit, to the hundredth. */
export function spread(values: Float64Array): Spread {
  const sorted = values.slice().sort();
  const at = (q: number) => round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN);
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    p50: at(0.5),
    p90: at(0.9),
    p99: at(0.99),
    p999: at(0.999),
    max: round(sorted.at(-1) ?? Number.NaN),
    mean: round(sum / sorted.length),
    samples: sorted.length,
  };
}

/** `to − from` for every token that has both. */
function between(from: Float64Array, to: Float64Array): Float64Array {
  const out: number[] = [];
  for (let i = 0; i < to.length; i++) {
    const d = to[i]! - from[i]!;
    if (!Number.isNaN(d)) out.push(d);
  }
  return Float64Array.from(out);
}

export interface FollowerTally {
  tasks: number;
  events: number;
  texts: number;
  outOfOrder: number;
  incompleteTasks: number;
  loopDelayMs: { p50: number; p99: number; max: number };
}

/** One run's samples: `workers` worker and `followers` follower processes wrote them into `dir`. */
export function tokenFigures(dir: string, workers: number, followers: number, tasks: number, perTask: number) {
  const names = (role: string, n: number) => Array.from({ length: n }, (_, i) => `${role}-${i}`);
  const merged = (role: string, n: number, column: Column) => mergeColumns(names(role, n).map((name) => readColumn(dir, name, column)));
  const c = Object.fromEntries([
    ...WORKER_COLUMNS.map((col) => [col, merged("worker", workers, col)]),
    ...FOLLOWER_COLUMNS.map((col) => [col, merged("follower", followers, col)]),
  ]) as Record<Column, Float64Array>;
  const summaries = <T>(role: string, n: number) => names(role, n).map((name) => JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as T);
  const tallies = summaries<FollowerTally>("follower", followers);
  const workerLoops = summaries<{ loopDelayMs: FollowerTally["loopDelayMs"] }>("worker", workers).map((s) => s.loopDelayMs);

  let delivered = 0;
  let firstAt = Number.POSITIVE_INFINITY;
  let lastAt = 0;
  for (const at of c.deliveredAt) {
    if (Number.isNaN(at)) continue;
    delivered++;
    firstAt = Math.min(firstAt, at);
    lastAt = Math.max(lastAt, at);
  }
  // Each task's pace as its producer kept it: tokens − 1 intervals from its first emit to its last.
  const rates: number[] = [];
  const firstTokens: number[] = [];
  for (let t = 0; t < tasks; t++) {
    const first = c.emitAt[t * perTask]!;
    const last = c.emitAt[t * perTask + perTask - 1]!;
    if (!Number.isNaN(first)) firstTokens.push(first);
    if (!Number.isNaN(first + last) && last > first) rates.push((perTask - 1) / ((last - first) / 1000));
  }
  // Whether a task's calls overlap: a token sent before the reply to the call carrying the one before it.
  let pairs = 0;
  let overlapping = 0;
  for (let i = 1; i < c.sentAt.length; i++) {
    // (Two tokens of one call are not two calls.)
    if (i % perTask === 0 || Number.isNaN(c.sentAt[i]! + c.repliedAt[i - 1]!) || c.sentAt[i] === c.sentAt[i - 1]) continue;
    pairs++;
    if (c.sentAt[i]! < c.repliedAt[i - 1]!) overlapping++;
  }
  const userLatency = between(c.ts, c.deliveredAt);
  return {
    delivered: {
      textEvents: delivered,
      expected: tasks * perTask,
      lost: tasks * perTask - delivered,
      outOfOrder: tallies.reduce((n, t) => n + t.outOfOrder, 0),
      incompleteTasks: tallies.reduce((n, t) => n + t.incompleteTasks, 0),
      allEvents: tallies.reduce((n, t) => n + t.events, 0),
    },
    eventsPerSec: Math.round(delivered / ((lastAt - firstAt) / 1000)),
    seconds: round((lastAt - firstAt) / 1000, 3),
    tokensPerSecPerTask: {
      mean: round(rates.reduce((a, b) => a + b, 0) / rates.length),
      min: round(Math.min(...rates)),
    },
    firstTokenSpreadMs: round(Math.max(...firstTokens) - Math.min(...firstTokens)),
    /** Share of tokens sent while the call carrying the task's previous token still awaited its reply. */
    sentBeforePreviousReply: round(overlapping / pairs, 4),
    latencyMs: spread(userLatency),
    breakdownMs: {
      emitToDelivered: spread(between(c.emitAt, c.deliveredAt)),
      emitToSent: spread(between(c.emitAt, c.sentAt)),
      sentToReplied: spread(between(c.sentAt, c.repliedAt)),
      sentToArrived: spread(between(c.sentAt, c.arrivedAt)),
      arrivedToDelivered: spread(between(c.arrivedAt, c.deliveredAt)),
    },
    timeline: timeline(c.deliveredAt, c.ts, firstAt),
    eventLoopDelayMs: { workers: workerLoops, followers: tallies.map((t) => t.loopDelayMs) },
  };
}

/** Per second of delivery from the first token on: tokens delivered, and their latency's p99 (ts → delivered). */
function timeline(deliveredAt: Float64Array, ts: Float64Array, firstAt: number) {
  const buckets: number[][] = [];
  for (let i = 0; i < deliveredAt.length; i++) {
    const at = deliveredAt[i]!;
    if (Number.isNaN(at)) continue;
    const second = Math.floor((at - firstAt) / 1000);
    buckets[second] ??= [];
    buckets[second].push(at - ts[i]!);
  }
  const full = Array.from(buckets, (b) => Float64Array.from(b ?? []));
  return { events: full.map((b) => b.length), p99Ms: full.map((b) => spread(b).p99) };
}
