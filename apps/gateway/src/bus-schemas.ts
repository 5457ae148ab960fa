// The event bus's paths, queries and answers (@flotilla/bus), as zod schemas: they validate the
// requests and describe the answers in the OpenAPI document. Topic and subscription names are the
// bus's own schemas, so the gateway accepts exactly the names the bus does.
import { SubscriptionNameSchema, TopicNameSchema } from "@flotilla/bus";
import { JsonValueSchema, TaskErrorSchema } from "@flotilla/core";
import { z } from "@hono/zod-openapi";
import { withOpenApi } from "./openapi-meta.ts";

/** A stream entry id (`<ms>-<seq>`): anything else would be a Redis error, not a missing entry. */
const StreamIdSchema = z.string().regex(/^\d{1,20}-\d{1,20}$/, "a stream entry id: <ms>-<seq>");

export const BusTopicParams = z.object({
  topic: withOpenApi(TopicNameSchema, { param: { name: "topic", in: "path" }, example: "orders.created" }),
});

export const SubscriptionParams = BusTopicParams.extend({
  name: withOpenApi(SubscriptionNameSchema, {
    param: { name: "name", in: "path" },
    description: "The subscription's name (its consumer group).",
    example: "mailer",
  }),
});

export const BusDeadLetterParams = SubscriptionParams.extend({
  id: StreamIdSchema.openapi({ param: { name: "id", in: "path" }, description: "The dead letter's id (not the event's).", example: "1718000000000-0" }),
});

export const InspectQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({ description: "At most this many (default 20)." }),
});

export const BusDeadLettersQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1000).optional().openapi({ description: "At most this many (default 100)." }),
  after: StreamIdSchema.optional().openapi({ description: "Page on after this dead letter id." }),
});

export const RepublishRequestSchema = z
  .object({ ids: z.array(StreamIdSchema).min(1).max(10_000).optional().openapi({ description: "Dead letter ids; left out: every one (up to 10,000)." }) })
  .strict()
  .openapi("RepublishRequest");

const GroupCountsSchema = z.object({ delivered: z.number(), acked: z.number(), retried: z.number(), reclaimed: z.number(), dead: z.number() });

export const SubscriptionSchema = z
  .object({
    name: z.string(),
    consumers: z.number().openapi({ description: "Consumers the group knows (live ones and those not yet forgotten)." }),
    pending: z.number().openapi({ description: "Delivered and not yet settled (being handled, or waiting for a retry)." }),
    lag: z.number().nullable().openapi({ description: "Events not yet delivered to it (null when Redis cannot tell, after trims of unread entries)." }),
    lastDeliveredId: z.string(),
    retrying: z.number(),
    deadLetters: z.number(),
    counts: GroupCountsSchema,
  })
  .openapi("BusSubscription");

export const TopicStatsSchema = z
  .object({
    topic: z.string(),
    length: z.number().openapi({ description: "Events the stream holds now." }),
    published: z.number(),
    groups: z.array(SubscriptionSchema).openapi({ description: "Its subscriptions (consumer groups)." }),
  })
  .openapi("TopicStats");

export const TopicsSchema = z.object({ topics: z.array(TopicStatsSchema) }).openapi("Topics");

export const BusEventSchema = z
  .object({
    id: z.string(),
    topic: z.string(),
    payload: JsonValueSchema,
    publishedAt: z.number(),
    correlationId: z.string().optional(),
    causationId: z.string().optional(),
    source: z.string().optional(),
    replyTo: z.string().optional(),
    webhook: z.string().optional(),
    headers: z.record(z.string(), z.string()),
    error: TaskErrorSchema.optional(),
  })
  .openapi("BusEvent");

const MalformedEventSchema = z
  .object({ id: z.string(), topic: z.string(), publishedAt: z.number(), malformed: z.string(), fields: z.record(z.string(), z.string()) })
  .openapi("MalformedBusEvent", { description: "An entry the bus cannot read: why, and its fields as they are." });

export const InspectedEventsSchema = z
  .object({ topic: z.string(), events: z.array(z.union([BusEventSchema, MalformedEventSchema])).openapi({ description: "Newest first." }) })
  .openapi("TopicEvents");

export const BusDeadLetterSchema = z
  .object({
    id: z.string(),
    eventId: z.string(),
    topic: z.string(),
    subscription: z.string(),
    reason: z.string().openapi({ description: "RETRIES_EXHAUSTED, or the code that sent it here at once (UNRECOVERABLE, MALFORMED_EVENT, …)." }),
    attempts: z.number().openapi({ description: "Deliveries made." }),
    error: TaskErrorSchema.optional(),
    failedAt: z.number(),
    event: BusEventSchema.optional().openapi({ description: "The event as published; absent when it could not be read (`raw` has its fields)." }),
    raw: z.record(z.string(), z.string()),
  })
  .openapi("BusDeadLetter");

export const BusDeadLettersSchema = z
  .object({ topic: z.string(), subscription: z.string(), deadLetters: z.array(BusDeadLetterSchema) })
  .openapi("BusDeadLetters");

export const RepublishedSchema = z
  .object({
    topic: z.string(),
    subscription: z.string(),
    republished: z.record(z.string(), z.string()).openapi({ description: "The new event's id, by dead letter id." }),
  })
  .openapi("Republished");

export const BusPurgedSchema = z.object({ topic: z.string(), subscription: z.string(), purged: z.number().int() }).openapi("BusPurged");
