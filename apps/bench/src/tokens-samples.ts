// The tokens scenario's per-event timestamps, shared by its processes and the scenario. Every token
// of the run has one slot, `task × tokensPerTask + token`, in each column a process fills; each
// process writes its columns to files in the run's directory when it stops (after the measured
// window, so writing costs the measurement nothing) and the scenario joins them slot by slot.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";

/** The wall clock at sub-ms resolution, comparable across this machine's processes (ms since the epoch). */
export const now = () => performance.timeOrigin + performance.now();

/**
 * What each column holds (ms since the epoch, NaN: not seen):
 * - emitAt: the producer handed the token over (Flotilla: the agent's `ctx.emit`; plain: before its `XADD`);
 * - sentAt: the call carrying it was written to Redis's socket (Flotilla: the publish script's `EVALSHA`);
 * - repliedAt: that call's reply reached the producer;
 * - arrivedAt: the follower's connection received the message that carries it (before any decoding);
 * - deliveredAt: the follower had it as an event (Flotilla: yielded by `stream()`; plain: parsed);
 * - ts: the event's own `ts` (the producer's Date.now() at emit, whole ms: what a user can compute).
 */
export const WORKER_COLUMNS = ["emitAt", "sentAt", "repliedAt"] as const;
export const FOLLOWER_COLUMNS = ["arrivedAt", "deliveredAt", "ts"] as const;
export type Column = (typeof WORKER_COLUMNS)[number] | (typeof FOLLOWER_COLUMNS)[number];

/** The token a text delta carries: the scenario's replies are "w0 w1 w2 …", one word a token. */
export const tokenOf = (delta: string): number => Number(delta.trim().slice(1));
/** Every token of the replies, as the scripted model splits them (on words, the space kept in front). */
export const reply = (tokens: number) => Array.from({ length: tokens }, (_, k) => `w${k}`).join(" ");
/** Every text delta in a raw message or script argument (`"delta":" w12"`): one a token. */
export const DELTAS = /"delta":" ?w(\d+)"/g;

/** One process's columns. */
export class TokenSamples<C extends Column> {
  readonly columns: Record<C, Float64Array>;
  readonly tokensPerTask: number;

  constructor(names: readonly C[], tokensPerTask: number, tasks: number) {
    this.tokensPerTask = tokensPerTask;
    this.columns = Object.fromEntries(names.map((n) => [n, new Float64Array(tasks * tokensPerTask).fill(Number.NaN)])) as Record<C, Float64Array>;
  }

  set(column: C, task: number, token: number, at: number): void {
    if (token >= 0 && token < this.tokensPerTask) this.columns[column][task * this.tokensPerTask + token] = at;
  }

  /** Writes `<name>.<column>.f64` per column and `<name>.json` (the process's summary). */
  write(dir: string, name: string, summary: object): void {
    for (const [column, values] of Object.entries<Float64Array>(this.columns)) writeFileSync(join(dir, `${name}.${column}.f64`), values);
    writeFileSync(join(dir, `${name}.json`), JSON.stringify(summary));
  }
}

/** A column as written by process `name`. */
export function readColumn(dir: string, name: string, column: Column): Float64Array {
  const bytes = readFileSync(join(dir, `${name}.${column}.f64`));
  // A copy: the file's Buffer may sit at an offset that is not a multiple of 8.
  return new Float64Array(new Uint8Array(bytes).buffer);
}

/** Several processes' copies of a column, merged: each slot from whichever process filled it. */
export function mergeColumns(parts: Float64Array[]): Float64Array {
  const out = new Float64Array(parts[0]!.length).fill(Number.NaN);
  for (const part of parts) for (let i = 0; i < part.length; i++) if (!Number.isNaN(part[i]!)) out[i] = part[i]!;
  return out;
}

/** Watches this process's event loop: how late a 5 ms timer fires, i.e. how long a ready socket may wait its turn. */
export function loopDelay() {
  const resolutionMs = 5;
  const h = monitorEventLoopDelay({ resolution: resolutionMs });
  h.enable();
  // The histogram holds the timer's whole interval: its lateness is what exceeds the resolution.
  const ms = (ns: number) => Math.max(0, Math.round(ns / 1e4 - resolutionMs * 100) / 100);
  return {
    /** Forgets what was seen so far (the start-up). */
    reset: () => h.reset(),
    summary: () => ({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max) }),
  };
}
