// Where alert events go (a log line, the alert stream other processes read, a webhook) and how the
// stream is read back.
import { createKeys, ErrorCodes, exponentialDelay, FlotillaError, type Keys, parseJsonOr, sleep } from "@flotilla/core";
import type { Redis } from "ioredis";
import type { AlertEvent, AlertSink } from "./alerts.ts";

/** A sink that writes one log line per alert event (`warn` when firing, `info` when resolved). */
export function logSink(logger: { warn(msg: string, fields?: object): void; info(msg: string, fields?: object): void }): AlertSink {
  return (e) => (e.state === "firing" ? logger.warn(`alert ${e.state}: ${e.message}`, { alert: e }) : logger.info(`alert ${e.state}: ${e.id}`, { alert: e }));
}

/**
 * A sink that appends alert events to a Redis stream (`{prefix}:{fleet}:alerts`) other processes can
 * read, and keeps the figures of the alerts firing current beside it (`{prefix}:{fleet}:alerts:now`,
 * rewritten every round while one fires and deleted when none does), so readers show an alert's
 * message and value as of the last round rather than as they were when it started firing.
 */
export function redisStreamSink(redis: Redis, options: { prefix?: string; maxLen?: number } = {}): AlertSink {
  const keys = createKeys(options.prefix);
  const key = keys.alerts();
  // Whether this sink wrote figures it has not deleted: a fleet where nothing fires costs no command.
  let wrote = false;
  const sink: AlertSink = async (e) => {
    await redis.xadd(key, "MAXLEN", "~", options.maxLen ?? 10_000, "*", "event", JSON.stringify(e));
  };
  sink.refresh = async (firing, validForMs) => {
    if (firing.length === 0) {
      if (wrote) await redis.del(keys.alertsNow());
      wrote = false;
      return;
    }
    const figures: Record<string, LiveFigures> = {};
    for (const e of firing) figures[e.id] = { message: e.message, value: e.value, threshold: e.threshold, at: e.at };
    await redis.set(keys.alertsNow(), JSON.stringify(figures), "PX", Math.max(1, Math.round(validForMs)));
    wrote = true;
  };
  return sink;
}

/** What the alerts-now key holds per alert id: its figures as of the manager's last round. */
interface LiveFigures {
  message: string;
  value: number;
  threshold: number;
  at: number;
}

function asLiveFigures(value: unknown): Record<string, LiveFigures> {
  if (typeof value !== "object" || value === null) return {};
  const out: Record<string, LiveFigures> = {};
  for (const [id, f] of Object.entries(value as Record<string, Record<string, unknown>>)) {
    if (typeof f?.message === "string" && typeof f.value === "number" && typeof f.threshold === "number" && typeof f.at === "number") {
      out[id] = { message: f.message, value: f.value, threshold: f.threshold, at: f.at };
    }
  }
  return out;
}

/**
 * The alert events `redisStreamSink` kept, newest first (at most `count`), and which alerts fire now:
 * per rule and queue, those whose latest event is `firing`. Events that cannot be read are skipped.
 */
export async function readAlerts(redis: Redis, keys: Keys, options: { count?: number } = {}): Promise<{ events: AlertEvent[]; firing: AlertEvent[] }> {
  // Both keys are in the {fleet} slot, on one node of a cluster: read together.
  const [rows, now] = await Promise.all([redis.xrevrange(keys.alerts(), "+", "-", "COUNT", options.count ?? 100), redis.get(keys.alertsNow())]);
  const live = asLiveFigures(parseJsonOr(now, undefined));
  const events: AlertEvent[] = [];
  for (const [, fields] of rows) {
    const i = fields.indexOf("event");
    const event = i >= 0 && i % 2 === 0 ? asAlertEvent(parseJsonOr(fields[i + 1], undefined)) : undefined;
    if (event) events.push(event);
  }
  const latest = new Map<string, AlertEvent>();
  for (const e of events) if (!latest.has(`${e.rule}\u0000${e.queue}`)) latest.set(`${e.rule}\u0000${e.queue}`, e);
  const firing = [...latest.values()].filter((e) => e.state === "firing");
  return { events, firing: firing.map((e) => (live[e.id] && live[e.id]!.at >= e.at ? { ...e, ...pickFigures(live[e.id]!) } : e)) };
}

const pickFigures = (f: LiveFigures) => ({ message: f.message, value: f.value, threshold: f.threshold });

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
