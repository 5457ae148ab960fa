import type { JsonValue, TaskError } from "@flotilla/core";
import type { BusEvent } from "./event.ts";
import type { Publisher, PublishItem } from "./publisher.ts";
import { WEBHOOK_TOPIC, type WebhookDelivery } from "./webhooks.ts";

/** A reply is published once per event and group: a redelivery after a crash between reply and ack repeats nothing within this window. */
const REPLY_WINDOW_MS = 3_600_000;

/**
 * Sends an event's outcome where its publisher asked: to its `replyTo` topic (same correlationId,
 * causationId = the event) and to its `webhook` (queued on the bus's webhook topic, which the
 * workers deliver with retries, so the consumer never waits on an HTTP call). Idempotent per event
 * and group.
 */
export class Replier {
  private readonly publisher: Publisher;
  private readonly source: string;

  constructor(publisher: Publisher, source: string) {
    this.publisher = publisher;
    this.source = source;
  }

  /** `ownSecret`: the subscription signs its webhooks with its own `webhookSecret` (the delivering worker looks it up; it is never written to Redis). */
  reply(event: BusEvent, group: string, result: JsonValue, ownSecret = false): Promise<unknown> {
    return this.send(event, group, result, undefined, ownSecret);
  }

  /** The event failed for good (dead-lettered): a requester waiting on `replyTo` is told, with the error. */
  replyError(event: BusEvent, group: string, error: TaskError): Promise<unknown> {
    return this.send(event, group, null, { code: error.code, message: error.message }, false);
  }

  private async send(
    event: BusEvent,
    group: string,
    result: JsonValue,
    error: { code: string; message: string } | undefined,
    ownSecret: boolean,
  ): Promise<unknown> {
    const items: PublishItem[] = [];
    const key = `${event.topic}:${group}:${event.id}`;
    // Who answered: the subscription, on which worker (or the bus's configured source).
    const common = { correlationId: event.correlationId, causationId: event.id, source: `${group}@${this.source}`, idempotencyWindowMs: REPLY_WINDOW_MS };
    if (event.replyTo) {
      items.push({ topic: event.replyTo, payload: result, options: { ...common, idempotencyKey: `reply:${key}` }, ...(error && { error }) });
    }
    if (event.webhook && !error) {
      const delivery: WebhookDelivery = {
        url: event.webhook,
        body: { topic: event.topic, event: event.id, subscription: group, correlationId: event.correlationId ?? null, result },
        ...(ownSecret && { ownSecret: true as const }),
      };
      items.push({ topic: WEBHOOK_TOPIC, payload: delivery as unknown as JsonValue, options: { ...common, idempotencyKey: `webhook:${key}` } });
    }
    if (items.length === 0) return;
    return this.publisher.publishMany(items);
  }
}
