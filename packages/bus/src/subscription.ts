import type { AgentLike } from "@flotilla/client";
import { type JsonValue, parseInput, ValidationError } from "@flotilla/core";
import type { BusEvent } from "./event.ts";
import { AnyTopicSchema, type ResolvedSubscribeOptions, type SubscribeOptions, SubscribeOptionsSchema } from "./schemas.ts";

/** What a handler gets beside the event. */
export interface HandlerContext {
  /** Aborted when the delivery's time limit passes, its lease was lost (taken over), or the worker stops. */
  signal: AbortSignal;
  /** This delivery's number: 1 the first time, more after a failure or a takeover. */
  deliveryCount: number;
  /** When the event was published (ms since the epoch, Redis's clock). */
  publishedAt: number;
  topic: string;
  /** The subscription (consumer group) delivering it. */
  subscription: string;
  /** The consumer (worker id) handling it. */
  consumer: string;
  /** The error the previous delivery failed with, on a redelivery after a failure. */
  lastError?: { code: string; message: string } | undefined;
  /** Publishes an event caused by this one: its `causationId` is this event's id, its `correlationId` carried unless given. */
  publish(topic: string, payload: JsonValue, options?: import("./schemas.ts").PublishOptions): Promise<string>;
}

/** Handles one event; what it returns is the reply (published to `replyTo`, POSTed to `webhook`). */
export type Handler<P extends JsonValue = JsonValue, R = unknown> = (event: BusEvent<P>, ctx: HandlerContext) => R | Promise<R>;

/** A subscription as a worker serves it: a handler, or an agent run as a Flotilla task per event. */
export interface Subscription {
  readonly topic: string;
  readonly options: ResolvedSubscribeOptions;
  readonly handler?: Handler | undefined;
  readonly agent?: AgentLike | undefined;
}

/**
 * A subscription for a worker (`busWorker({ subscriptions })`): `handler(event, ctx)` runs for each
 * event of `topic`, or `agent` runs as a Flotilla task per event (its id derived from the event and
 * the subscription, so a redelivery never makes a second task). Every subscription `name` on a topic
 * gets every event; the consumers of one name share them. Checked here: a bad option is a
 * ValidationError naming it.
 */
export function subscribe<P extends JsonValue = JsonValue>(topic: string, target: Handler<P> | AgentLike, options: SubscribeOptions): Subscription {
  const t = AnyTopicSchema.safeParse(topic);
  if (!t.success) throw ValidationError.of("subscription", "topic", `invalid topic "${String(topic)}": use letters, digits and _ . - only, at most 64`);
  const resolved = parseInput(SubscribeOptionsSchema, options, "subscription options");
  if (typeof target === "function") return { topic: t.data, options: resolved, handler: target as Handler };
  if (!target || typeof target !== "object") throw ValidationError.of("subscription", "target", "give a handler function or an agent");
  return { topic: t.data, options: resolved, agent: target };
}

/** How a subscription is named in a worker's heartbeat and the fleet status: `<topic>/<name>`. */
export const subscriptionId = (s: Subscription): string => `${s.topic}/${s.options.name}`;
