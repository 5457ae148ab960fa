import { type Logger, sleep } from "@flotilla/core";
import { type FlotillaMetrics, METRICS } from "@flotilla/metrics";
import type { Redis } from "ioredis";
import { scripts } from "./scripts.ts";

/** Events per script call (ack, renew; a reclaim looks at ten times its count): Lua's unpack takes about 8,000 values at most. */
export const CHUNK = 1000;

export interface AckerDeps {
  redis: Redis;
  /** The topic's stream, the group's retries and errors, the topic's counters. */
  keys: { stream: string; retries: string; errors: string; stats: string };
  group: string;
  metrics: FlotillaMetrics;
  logger: Logger;
  attrs: { topic: string; group: string };
}

/**
 * Acknowledges a group's handled events in batches: whatever was handled while a call was out goes
 * in the next one (at most CHUNK per call). A failed call is retried for a while; an event left
 * unacknowledged is delivered again after its lease.
 */
export class Acker {
  /** Handled events, with whether a delivery of theirs failed before (they have an error entry to drop). */
  private readonly pending: Array<{ id: string; failedBefore: boolean }> = [];
  private flushing: Promise<void> | undefined;
  private readonly deps: AckerDeps;

  constructor(deps: AckerDeps) {
    this.deps = deps;
  }

  ack(id: string, failedBefore: boolean): Promise<void> {
    this.pending.push({ id, failedBefore });
    return this.flush();
  }

  /** Sends what is pending; resolves once it was sent (or given up). */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing.then(() => (this.pending.length > 0 ? this.flush() : undefined));
    if (this.pending.length === 0) return Promise.resolve();
    const batch = this.pending.splice(0, CHUNK);
    // Events that failed before come first: only they have retry and error entries to drop.
    const failed = batch.filter((a) => a.failedBefore).map((a) => a.id);
    const ids = [...failed, ...batch.filter((a) => !a.failedBefore).map((a) => a.id)];
    const { redis, keys, group, metrics, logger, attrs } = this.deps;
    this.flushing = (async () => {
      for (let tries = 0; ; tries++) {
        try {
          await scripts.ack.run(redis, [keys.stream, keys.retries, keys.errors, keys.stats], [group, failed.length, ...ids]);
          metrics.add(METRICS.busAcked, ids.length, attrs);
          return;
        } catch (err) {
          if (tries >= 20) return logger.warn("could not acknowledge events; they will be delivered again", { err, ...attrs });
          await sleep(Math.min(2000, 50 * 2 ** tries));
        }
      }
    })().finally(() => {
      this.flushing = undefined;
    });
    return this.flushing;
  }
}
