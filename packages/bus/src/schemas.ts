import { BackoffSchema, IdempotencyKeySchema, IdempotencyWindowSchema, JsonValueSchema, QueueNameSchema } from "@flotilla/core";
import { z } from "zod";

/**
 * A topic's name: letters, digits and `_ . -`, at most 64 (dots make hierarchies: `file.uploaded`).
 * Names starting with `_` are the bus's own (`_webhooks`, `_reply.<id>`).
 */
export const TopicNameSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*$/, "use letters, digits and _ . - only, starting with a letter or digit");
const InternalTopicSchema = z
  .string()
  .min(2)
  .max(64)
  .regex(/^_[A-Za-z0-9][A-Za-z0-9_.-]*$/);
/** A topic name, the bus's own included. */
export const AnyTopicSchema = z.union([TopicNameSchema, InternalTopicSchema]);
/** A subscription's name: its consumer group on the topic. */
export const SubscriptionNameSchema = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9_.-]+$/, "use letters, digits and _ . - only");

const HeadersSchema = z.record(z.string().max(256), z.string().max(4096));
const CorrelationIdSchema = z.string().min(1).max(256);

/** Where a webhook reply goes: an http(s) URL. */
export const WebhookUrlSchema = z.url({ protocol: /^https?$/ });

const SecretSchema = z.string().min(1, "must not be empty");
/** A webhook secret, or a list of them for a rotation: the first (current) signs, a verifier accepts any. */
export const WebhookSecretSchema = z.union([SecretSchema, z.array(SecretSchema).min(1, "list at least one secret")]);

/** What an event carries beside its payload: set by its publisher, read by handlers. */
const MetaFields = {
  /** Carried to handlers and copied onto replies; `request()` matches replies by it. */
  correlationId: CorrelationIdSchema.optional(),
  /** The event this one answers or was caused by (replies set it to the event they answer). */
  causationId: z.string().max(256).optional(),
  /** Who published (a service or agent name), for tracing where events come from. */
  source: z.string().max(256).optional(),
  /** A topic the handler's result is published to (with the same correlationId). */
  replyTo: AnyTopicSchema.optional(),
  /** A URL the handler's result is POSTed to (retried with backoff, signed when the workers have a secret). */
  webhook: WebhookUrlSchema.optional(),
  /** Free-form string headers carried to handlers. */
  headers: HeadersSchema.optional(),
};

export const PublishOptionsSchema = z
  .object({
    ...MetaFields,
    /** A second publish with the same key within its window returns the first event's id and publishes nothing. */
    idempotencyKey: IdempotencyKeySchema.optional(),
    /** How long an idempotency key holds. @default 86_400_000 (24 h) */
    idempotencyWindowMs: IdempotencyWindowSchema,
  })
  .strict();
export type PublishOptions = z.input<typeof PublishOptionsSchema>;

/** An event's metadata as stored (field `m` of its stream entry). */
export const EventMetaSchema = z
  .object({
    ...MetaFields,
    /** On a reply: the error the answered event ended with (its handler failed for good). */
    error: z.object({ code: z.string(), message: z.string() }).optional(),
  })
  .strict();
export type EventMeta = z.output<typeof EventMetaSchema>;

/** Where a new subscription's group starts: `"new"` (events published from now on), `"start"` (every event the stream holds), or an event id (the events after it). */
export const FromSchema = z.union([z.literal("new"), z.literal("start"), z.string().regex(/^\d+-\d+$/, "an event id: <ms>-<seq>")]);

export const SubscribeOptionsSchema = z
  .object({
    /** The subscription's name: its consumer group. Subscriptions with the same name share events; each name gets every event. */
    name: SubscriptionNameSchema,
    /** Events this process handles at once for the subscription. @default 10 */
    concurrency: z.number().int().min(1).max(10_000).default(10),
    /** Where the group starts when it is created (an existing group keeps its place). @default "new" */
    from: FromSchema.default("new"),
    /** Deliveries after the first one failed; then the event goes to the dead letters. @default 3 */
    maxRetries: z.number().int().min(0).max(100).default(3),
    /** Wait before each redelivery of a failed event. @default exponential from 1 s, ×2, to 5 min, with jitter */
    backoff: BackoffSchema.optional(),
    /**
     * The lease of a delivery: renewed every third of it while the handler runs, so only a dead or
     * frozen consumer's deliveries are taken over, this long after its last renewal. @default 30_000
     */
    reclaimAfterMs: z.number().int().min(200).max(3_600_000).default(30_000),
    /** Failed events go to the group's dead-letter stream (false: they are dropped, acknowledged). @default true */
    deadLetter: z.boolean().default(true),
    /** A handler's time limit per delivery; it is aborted then and the delivery fails (retried). @default none */
    timeoutMs: z.number().int().positive().optional(),
    /** For an agent subscription: the queue its tasks go to. @default "default" */
    queue: QueueNameSchema.optional(),
    /**
     * The secret this subscription's webhook replies are signed with, over the worker-wide one
     * (`busWorker({ webhooks: { secret } })`, FLOTILLA_WEBHOOK_SECRET); a list for a rotation: the
     * first signs. Kept in the worker's memory only: serve the subscription on every worker that
     * delivers webhooks. @default the worker-wide secret
     */
    webhookSecret: WebhookSecretSchema.optional(),
  })
  .strict();
export type SubscribeOptions = z.input<typeof SubscribeOptionsSchema>;
export type ResolvedSubscribeOptions = z.output<typeof SubscribeOptionsSchema>;

export const BusOptionsSchema = z
  .object({
    /** Entries a topic's stream keeps about (never trimming one a group has not settled). @default 100_000 */
    maxLen: z.number().int().min(1).max(100_000_000).default(100_000),
    /** Largest payload (JSON bytes) one event may carry. @default 1_048_576 (1 MiB) */
    maxPayloadBytes: z
      .number()
      .int()
      .min(1)
      .max(64 * 1024 * 1024)
      .default(1_048_576),
    /** Dead letters a group keeps about. @default 10_000 */
    deadLetterMaxLen: z.number().int().min(1).max(10_000_000).default(10_000),
    /** Notable deliveries (retried, reclaimed, dead) a topic's metrics stream keeps about. @default 10_000 */
    metricsMaxLen: z.number().int().min(1).max(10_000_000).default(10_000),
    /** Who publishes, set on events as `source` unless a publish gives its own. @default none */
    source: z.string().max(256).optional(),
  })
  .strict();
export type BusTuning = z.input<typeof BusOptionsSchema>;

/** What `busWorker({ webhooks })` takes (checked strictly: a misspelt option is refused, not ignored). */
export const WebhooksOptionsSchema = z
  .object({
    /** The worker-wide secret (or a list for a rotation: the first signs). @default FLOTILLA_WEBHOOK_SECRET, else unsigned */
    secret: WebhookSecretSchema.optional(),
    /** A request's time limit. @default 10_000 */
    timeoutMs: z.number().int().positive().optional(),
    /** The hosts (`host` or `host:port`) webhooks may go to. @default any host */
    allowedHosts: z.array(z.string().min(1)).optional(),
    /** Webhooks this worker POSTs at once. @default 10 */
    concurrency: z.number().int().min(1).max(10_000).optional(),
    /** Deliveries after the first failed one; then the webhook goes to the dead letters. @default 8 */
    maxRetries: z.number().int().min(0).max(100).optional(),
    /** Wait before each new try. @default 1 s, ×2, to 5 min, jitter 0.2 */
    backoff: BackoffSchema.optional(),
  })
  .strict();
export type ResolvedBusTuning = z.output<typeof BusOptionsSchema>;

export { JsonValueSchema };
