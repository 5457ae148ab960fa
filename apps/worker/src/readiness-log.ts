import type { Logger, ReadinessState } from "@flotilla/worker";

export interface ReadinessLogOptions {
  /** The worker's readiness (`worker.readiness`): the one place that decides it. */
  readiness: () => ReadinessState;
  /** Where its Redis is (`host:port`), for the connection lines. */
  redis: string;
  log: Logger;
  /** How often readiness is looked at; a flip shorter than this is not logged. @default 1000 */
  intervalMs?: number;
}

/**
 * Logs, once per change, what an operator needs to see without scraping: the worker's Redis
 * connection lost and back (warn / info, with how long it was down: the worker's `redis` reason),
 * and readiness lost and back (what /readyz answers, with the reason). Returns the function that
 * stops watching (before the worker closes its connections, so a shutdown is not logged as a loss).
 */
export function watchReadiness({ readiness, redis, log, intervalMs = 1000 }: ReadinessLogOptions): () => void {
  let lostAt: number | undefined;
  let notReadySince: number | undefined;
  const look = () => {
    const state = readiness();
    const down = state.reasons.find((r) => r.reason === "redis");
    if (down && lostAt === undefined) {
      lostAt = down.since;
      log.warn("redis connection lost", { redis });
    } else if (!down && lostAt !== undefined) {
      log.info("redis connection restored", { redis, downMs: Date.now() - lostAt });
      lostAt = undefined;
    }
    if (!state.ready && notReadySince === undefined) {
      notReadySince = Date.now();
      const full = state.reasons.find((r) => r.reason === "redis-full");
      log.warn("not ready", down ? { reason: "redis unreachable" } : full ? { reason: "redis full", detail: full.detail } : { reason: "not claiming" });
    } else if (state.ready && notReadySince !== undefined) {
      log.info("ready again", { notReadyMs: Date.now() - notReadySince });
      notReadySince = undefined;
    }
  };
  const timer = setInterval(look, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
