import { createHmac, timingSafeEqual } from "node:crypto";
import { ErrorCodes, FlotillaError, type JsonValue, UnrecoverableError } from "@flotilla/core";
import type { Handler } from "./subscription.ts";

/** The bus's own topic of webhook deliveries: replies wait here until a worker POSTs them. */
export const WEBHOOK_TOPIC = "_webhooks";
/** The subscription (group) of the workers that deliver webhooks. */
export const WEBHOOK_SUBSCRIPTION = "webhooks";
/** `sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">` with the workers' secret. */
export const SIGNATURE_HEADER = "x-flotilla-signature";
/** When the request was signed (ms since the epoch), part of what is signed: a replayed request is recognised by its age. */
export const TIMESTAMP_HEADER = "x-flotilla-timestamp";

/** A webhook reply waiting on WEBHOOK_TOPIC. */
export interface WebhookDelivery {
  url: string;
  body: { topic: string; event: string; subscription: string; correlationId: string | null; result: JsonValue };
}

/** The signature header's value for `body` sent at `timestamp`. */
export function signWebhook(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * Checks a webhook request on the receiving side: the signature matches the body and timestamp,
 * and the timestamp is within `toleranceMs` of now (a replayed old request fails). Compares in
 * constant time.
 */
export function verifyWebhook(
  secret: string,
  request: { signature: string | null | undefined; timestamp: string | null | undefined; body: string },
  options: { toleranceMs?: number; now?: number } = {},
): boolean {
  const ts = Number(request.timestamp);
  if (!request.signature || !Number.isFinite(ts)) return false;
  if (Math.abs((options.now ?? Date.now()) - ts) > (options.toleranceMs ?? 300_000)) return false;
  const want = Buffer.from(signWebhook(secret, ts, request.body));
  const got = Buffer.from(request.signature);
  return want.length === got.length && timingSafeEqual(want, got);
}

export interface WebhookOptions {
  /** Signs each request (SIGNATURE_HEADER, TIMESTAMP_HEADER) when set. @default unsigned */
  secret?: string | undefined;
  /** A request's time limit. @default 10_000 */
  timeoutMs?: number | undefined;
  /**
   * The hosts (`host` or `host:port`, as in the URL) webhooks may go to. A publisher chooses the URL,
   * so without a list any writer to the bus can make workers POST anywhere their network reaches;
   * a URL to another host is dead-lettered without a request (WEBHOOK_FAILED). @default any host
   */
  allowedHosts?: readonly string[] | undefined;
}

/** Statuses worth trying again: the receiver may be up later. Other 4xx answers will not change. */
const RETRYABLE_STATUS = new Set([408, 425, 429]);

/**
 * The handler of the webhook subscription: POSTs the reply as JSON, signed when a secret is set.
 * A 2xx answer settles it; a 5xx, 408, 425, 429, timeout or network error is retried with the
 * subscription's backoff; another 4xx goes to the dead letters at once.
 */
export function webhookHandler(options: WebhookOptions = {}): Handler {
  return async (event, ctx) => {
    const delivery = event.payload as unknown as WebhookDelivery;
    if (options.allowedHosts) {
      const url = new URL(delivery.url);
      if (!options.allowedHosts.includes(url.host) && !options.allowedHosts.includes(url.hostname)) {
        throw new UnrecoverableError(`webhook ${delivery.url}: host ${url.host} is not among the workers' allowedHosts`, ErrorCodes.WEBHOOK_FAILED);
      }
    }
    const body = JSON.stringify(delivery.body);
    const headers: Record<string, string> = { "content-type": "application/json", "x-flotilla-event": delivery.body.event };
    if (options.secret) {
      const ts = Date.now();
      headers[TIMESTAMP_HEADER] = String(ts);
      headers[SIGNATURE_HEADER] = signWebhook(options.secret, ts, body);
    }
    let res: Response;
    try {
      res = await fetch(delivery.url, {
        method: "POST",
        headers,
        body,
        signal: AbortSignal.any([ctx.signal, AbortSignal.timeout(options.timeoutMs ?? 10_000)]),
      });
    } catch (err) {
      throw new FlotillaError(ErrorCodes.WEBHOOK_FAILED, `webhook ${delivery.url} could not be reached: ${err instanceof Error ? err.message : String(err)}`, {
        cause: err,
      });
    }
    await res.body?.cancel().catch(() => {});
    if (res.ok) return { status: res.status };
    const message = `webhook ${delivery.url} answered ${res.status}`;
    if (res.status >= 400 && res.status < 500 && !RETRYABLE_STATUS.has(res.status)) throw new UnrecoverableError(message, ErrorCodes.WEBHOOK_FAILED);
    throw new FlotillaError(ErrorCodes.WEBHOOK_FAILED, message);
  };
}
