// Where alert events go (a log line, the alert stream other processes read, a webhook) and how the
// stream is read back.
import { createKeys, ErrorCodes, exponentialDelay, FlotillaError, type Keys, parseJsonOr, sleep } from "@flotilla/core";
import type { Redis } from "ioredis";
import type { AlertEvent, AlertSink } from "./alerts.ts";

/** A sink that writes one log line per alert event (`warn` when firing, `info` when resolved). */
export function logSink(logger: { warn(msg: string, fields?: object): void; info(msg: string, fields?: object): void }): AlertSink {
  return (e) => (e.state === "firing" ? logger.warn(`alert ${e.state}: ${e.message}`, { alert: e }) : logger.info(`alert ${e.state}: ${e.id}`, { alert: e }));
}

/** A sink that appends alert events to a Redis stream (`{prefix}:alerts`) other processes can read. */
export function redisStreamSink(redis: Redis, options: { prefix?: string; maxLen?: number } = {}): AlertSink {
  const key = createKeys(options.prefix).alerts();
  return async (e) => {
    await redis.xadd(key, "MAXLEN", "~", options.maxLen ?? 10_000, "*", "event", JSON.stringify(e));
  };
}

/**
 * The alert events `redisStreamSink` kept, newest first (at most `count`), and which alerts fire now:
 * per rule and queue, those whose latest event is `firing`. Events that cannot be read are skipped.
 */
export async function readAlerts(redis: Redis, keys: Keys, options: { count?: number } = {}): Promise<{ events: AlertEvent[]; firing: AlertEvent[] }> {
  const rows = await redis.xrevrange(keys.alerts(), "+", "-", "COUNT", options.count ?? 100);
  const events: AlertEvent[] = [];
  for (const [, fields] of rows) {
    const i = fields.indexOf("event");
    const event = i >= 0 && i % 2 === 0 ? asAlertEvent(parseJsonOr(fields[i + 1], undefined)) : undefined;
    if (event) events.push(event);
  }
  const latest = new Map<string, AlertEvent>();
  for (const e of events) if (!latest.has(`${e.rule}\u0000${e.queue}`)) latest.set(`${e.rule}\u0000${e.queue}`, e);
  return { events, firing: [...latest.values()].filter((e) => e.state === "firing") };
}

/** An alert event as `redisStreamSink` writes it, or undefined for anything else. */
function asAlertEvent(value: unknown): AlertEvent | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const e = value as Record<string, unknown>;
  const texts = ["id", "rule", "queue", "message"].every((k) => typeof e[k] === "string");
  const numbers = ["value", "threshold", "since", "at"].every((k) => typeof e[k] === "number");
  const kinds = (e.severity === "warning" || e.severity === "critical") && (e.state === "firing" || e.state === "resolved");
  return texts && numbers && kinds ? (e as unknown as AlertEvent) : undefined;
}

/** A sink that POSTs each alert event as JSON, retrying with backoff (3 tries by default) until a 2xx. */
export function webhookSink(
  url: string,
  options: { retries?: number; backoffMs?: number; headers?: Record<string, string>; timeoutMs?: number } = {},
): AlertSink {
  const tries = (options.retries ?? 2) + 1;
  // backoffMs, then twice that, and so on.
  const backoff = { baseMs: options.backoffMs ?? 500 };
  return async (e) => {
    let last: unknown;
    for (let i = 0; i < tries; i++) {
      if (i > 0) await sleep(exponentialDelay(backoff, i - 1));
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json", ...options.headers },
          body: JSON.stringify(e),
          signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
        });
        if (res.ok) return;
        last = new FlotillaError(ErrorCodes.ALERT_DELIVERY, `webhook ${url} answered ${res.status}`);
      } catch (err) {
        last = err;
      }
    }
    throw last;
  };
}
