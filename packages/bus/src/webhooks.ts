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
  /**
   * Set when the subscription signs with its own `webhookSecret`: the delivering worker signs with
   * that subscription's secret (never stored in Redis), not the worker-wide one.
   */
  ownSecret?: true;
}

/**
 * A webhook secret, or several for a rotation: the first (current) signs, and a verifier accepts a
 * request signed with any of them.
 */
export type WebhookSecret = string | readonly string[];

/** The secrets of a WebhookSecret, current first. */
export const secretList = (secret: WebhookSecret): readonly string[] => (typeof secret === "string" ? [secret] : secret);

/** The signature header's value for `body` sent at `timestamp`, made with `secret` (the first of a list: the current one). */
export function signWebhook(secret: WebhookSecret, timestamp: number, body: string): string {
  const current = secretList(secret)[0];
  if (!current) throw new TypeError("signWebhook: no secret");
  return `sha256=${createHmac("sha256", current).update(`${timestamp}.${body}`).digest("hex")}`;
}

/**
 * Checks a webhook request on the receiving side: the signature matches the body and timestamp
 * under `secret` — or under any secret of a list, so a rotation accepts requests signed with the new
 * secret and the old one meanwhile — and the timestamp is within `toleranceMs` of now (a replayed
 * old request fails). Compares in constant time.
 */
export function verifyWebhook(
  secret: WebhookSecret,
  request: { signature: string | null | undefined; timestamp: string | null | undefined; body: string },
  options: { toleranceMs?: number; now?: number } = {},
): boolean {
  const ts = Number(request.timestamp);
  if (!request.signature || !Number.isFinite(ts)) return false;
  if (Math.abs((options.now ?? Date.now()) - ts) > (options.toleranceMs ?? 300_000)) return false;
  const got = Buffer.from(request.signature);
  let matched = false;
  // Every secret is compared, so the time taken does not tell which one matched.
  for (const one of secretList(secret)) {
    if (!one) continue;
    const want = Buffer.from(signWebhook(one, ts, request.body));
    if (want.length === got.length && timingSafeEqual(want, got)) matched = true;
  }
  return matched;
}

export interface WebhookOptions {
  /**
   * Signs each request (SIGNATURE_HEADER, TIMESTAMP_HEADER) with this secret (the first of a list).
   * A subscription's own `webhookSecret` wins for its webhooks.
   * @default FLOTILLA_WEBHOOK_SECRET (comma-separated, current first), else unsigned
   */
  secret?: WebhookSecret | undefined;
  /** A request's time limit. @default 10_000 */
  timeoutMs?: number | undefined;
  /**
   * The hosts (`host` or `host:port`, as in the URL) webhooks may go to. A publisher chooses the URL,
   * so without a list any writer to the bus can make workers POST anywhere their network reaches;
   * a URL to another host is dead-lettered without a request (WEBHOOK_FAILED). @default any host
   */
  allowedHosts?: readonly string[] | undefined;
}

/** The secret a subscription signs its webhooks with (its `webhookSecret`), if this worker serves it. */
export type SubscriptionSecrets = (topic: string, subscription: string) => WebhookSecret | undefined;

/** Statuses worth trying again: the receiver may be up later. Other 4xx answers will not change. */
const RETRYABLE_STATUS = new Set([408, 425, 429]);

/**
 * The handler of the webhook subscription: POSTs the reply as JSON, signed when a secret is set.
 * A 2xx answer settles it; a 5xx, 408, 425, 429, timeout or network error is retried with the
 * subscription's backoff; another 4xx goes to the dead letters at once.
 */
export function webhookHandler(options: WebhookOptions = {}, secretOf: SubscriptionSecrets = () => undefined): Handler {
  return async (event, ctx) => {
    const delivery = event.payload as unknown as WebhookDelivery;
    const secret = delivery.ownSecret ? secretOf(delivery.body.topic, delivery.body.subscription) : options.secret;
    if (delivery.ownSecret && !secret) {
      // Retried (on whichever worker takes it next): a worker that serves the subscription knows its secret.
      throw new FlotillaError(
        ErrorCodes.WEBHOOK_FAILED,
        `webhook ${delivery.url}: subscription ${delivery.body.topic}/${delivery.body.subscription} signs with its own webhookSecret, and this worker does not serve it, so does not know it`,
      );
    }
    if (options.allowedHosts) {
      const url = new URL(delivery.url);
      if (!options.allowedHosts.includes(url.host) && !options.allowedHosts.includes(url.hostname)) {
        throw new UnrecoverableError(`webhook ${delivery.url}: host ${url.host} is not among the workers' allowedHosts`, ErrorCodes.WEBHOOK_FAILED);
      }
    }
    const body = JSON.stringify(delivery.body);
    const headers: Record<string, string> = { "content-type": "application/json", "x-flotilla-event": delivery.body.event };
    if (secret) {
      const ts = Date.now();
      headers[TIMESTAMP_HEADER] = String(ts);
      headers[SIGNATURE_HEADER] = signWebhook(secret, ts, body);
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
