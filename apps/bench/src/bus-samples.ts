// The bus scenario's consumer processes record, per phase, each handled event's publish → handler
// latency, and hand them to the scenario once they are told to stop.
import { Redis } from "ioredis";

/** What a consumer process reports at exit: per phase, the events it handled, the last one's time and every latency. */
export interface PhaseSamples {
  handled: number;
  /** Date.now() when it handled its last event of the phase. */
  lastAt: number;
  /** Date.now() − the event's publish time (ms; the stream id's ms part: Redis's clock, the same machine's). Whole ms. */
  latencies: number[];
  /** The same span at µs resolution, from the publisher's call: the handler's clock − the payload's `t`. */
  fromCall: number[];
}
export type ProcessSamples = Record<string, PhaseSamples>;

/**
 * An event of the scenario: its phase (`warm`, `burst`, `steady`, or a publish mode), its number and
 * (end to end) `t`, when the publisher called publish (`now()`: ms since the epoch, fractional).
 */
export type BusBenchPayload = { phase: string; i: number; t?: number };

/** The wall clock at µs resolution (the same across this machine's processes). */
export const now = () => performance.timeOrigin + performance.now();

export class SampleRecorder {
  readonly phases: ProcessSamples = {};

  /** One handled event, published at `publishedAt` (ms, the event id's) after its publisher's call at `t`. */
  record(payload: BusBenchPayload, publishedAt: number): void {
    const at = Date.now();
    const phase = payload.phase;
    this.phases[phase] ??= { handled: 0, lastAt: 0, latencies: [], fromCall: [] };
    const p = this.phases[phase];
    p.handled++;
    p.lastAt = at;
    p.latencies.push(at - publishedAt);
    if (payload.t !== undefined) p.fromCall.push(Math.round((now() - payload.t) * 1000) / 1000);
  }

  /** Appends this process's samples (one JSON string) to the list `key`: after the measurements, so it costs them nothing. */
  async report(url: string | undefined, key: string): Promise<void> {
    const redis = new Redis(url ?? "redis://127.0.0.1:6379");
    await redis.rpush(key, JSON.stringify(this.phases));
    redis.disconnect();
  }
}

/** Every consumer process's samples, merged per phase. */
export async function collectSamples(redis: Redis, key: string): Promise<ProcessSamples> {
  const out: ProcessSamples = {};
  for (const raw of await redis.lrange(key, 0, -1)) {
    for (const [phase, s] of Object.entries(JSON.parse(raw) as ProcessSamples)) {
      out[phase] ??= { handled: 0, lastAt: 0, latencies: [], fromCall: [] };
      const o = out[phase];
      o.handled += s.handled;
      o.lastAt = Math.max(o.lastAt, s.lastAt);
      for (const l of s.latencies) o.latencies.push(l);
      for (const l of s.fromCall) o.fromCall.push(l);
    }
  }
  return out;
}
