import { describeRedis, type OwnedRedis } from "@flotilla/core/redis";
import type { Logger } from "@flotilla/worker";

export interface ReadinessLogOptions {
  /** What /readyz answers. */
  isReady: () => boolean;
  /** The worker's command connection: its loss and return are logged. */
  redis: OwnedRedis["redis"];
  log: Logger;
  /** How often readiness is looked at. @default 1000 */
  intervalMs?: number;
}

/**
 * Logs, once per change, what an operator needs to see without scraping: the worker's Redis
 * connection lost and back (warn / info, with how long it was down), and readiness lost and back
 * (what /readyz answers, with the reason). Returns the function that stops watching (before the
 * worker closes its connections, so a shutdown is not logged as a loss).
 */
export function watchReadiness({ isReady, redis, log, intervalMs = 1000 }: ReadinessLogOptions): () => void {
  const address = describeRedis(redis);
  let lostAt: number | undefined;
  let notReadySince: number | undefined;
  const onClose = () => {
    if (lostAt !== undefined) return;
    lostAt = Date.now();
    log.warn("redis connection lost", { redis: address });
  };
  const onReady = () => {
    if (lostAt === undefined) return;
    log.info("redis connection restored", { redis: address, downMs: Date.now() - lostAt });
    lostAt = undefined;
  };
  const onError = () => {}; // each failed reconnect; the session logs them at debug
  redis.on("close", onClose);
  redis.on("ready", onReady);
  redis.on("error", onError);
  const look = () => {
    const ready = isReady();
    if (!ready && notReadySince === undefined) {
      notReadySince = Date.now();
      log.warn("not ready", { reason: lostAt !== undefined || redis.status !== "ready" ? "redis unreachable" : "not claiming" });
    } else if (ready && notReadySince !== undefined) {
      log.info("ready again", { notReadyMs: Date.now() - notReadySince });
      notReadySince = undefined;
    }
  };
  const timer = setInterval(look, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    redis.off("close", onClose);
    redis.off("ready", onReady);
    redis.off("error", onError);
  };
}
