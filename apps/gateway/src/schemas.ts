// The request and response bodies, as zod schemas: they validate requests and generate the OpenAPI
// document. Wherever @flotilla/core has the schema (a task id, a status, an agent, submit options,
// JSON), it is used as is, so the gateway accepts exactly what the client library accepts.

import { WorkerRecordSchema } from "@flotilla/client";
import {
  JsonValueSchema,
  PrioritySchema,
  QueueNameSchema,
  RunnableSpecSchema,
  SignalNameSchema,
  SubmitOptionsSchema,
  TaskErrorSchema,
  TaskIdSchema,
  TaskStatusSchema,
  TokenUsageSchema,
  WaitRequestSchema,
} from "@flotilla/core";
import { z } from "@hono/zod-openapi";
import { JSON_VALUE_OPENAPI } from "./json-value-openapi.ts";
import { withOpenApi } from "./openapi-meta.ts";

// JSON is recursive: named, it becomes one `$ref` component instead of an endless inline schema. (This
// sets OpenAPI metadata on core's schema object, which the generator reads; validation is unchanged.)
// Its OpenAPI shape is written out (see json-value-openapi.ts): the one generated from the zod schema
// has `nullable` without a `type`, which linters refuse and code generators read as `any`.
withOpenApi(JsonValueSchema, "JsonValue", JSON_VALUE_OPENAPI);

/** A JSON object: what the graph and bus packages shape themselves, and error details. */
export const JsonObjectSchema = z.record(z.string(), JsonValueSchema);

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "VALIDATION_ERROR" }),
      message: z.string(),
      field: z.string().optional().openapi({ description: "The offending field, on a VALIDATION_ERROR." }),
      details: JsonObjectSchema.optional().openapi({
        description: "What a caller can use: a failed task's `taskError`, validation `issues`, a signal's `status`…",
      }),
    }),
  })
  .openapi("Error");

export const TaskIdParams = z.object({
  id: withOpenApi(TaskIdSchema, {
    param: { name: "id", in: "path" },
    description: "`<queue>/<name>`, with the slash URL-encoded: `default%2F01JX…`.",
    example: "default/01JXAMPLE",
  }),
});

export const QueueParams = z.object({ queue: withOpenApi(QueueNameSchema, { param: { name: "queue", in: "path" }, example: "default" }) });

export const DeadLetterParams = QueueParams.extend({
  id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "id", in: "path" }, description: "The dead letter's id (a stream entry id).", example: "1718000000000-0" }),
});

export const SubmitRequestSchema = z
  .object({
    agent: RunnableSpecSchema,
    input: JsonValueSchema,
    options: SubmitOptionsSchema.optional(),
  })
  .strict()
  .openapi("SubmitRequest");

export const SubmitHeaders = z.object({
  "idempotency-key": z
    .string()
    .min(1)
    .max(512)
    .optional()
    .openapi({
      param: { name: "idempotency-key", in: "header" },
      description: "Sets `options.idempotencyKey`: a resend within its window returns the first task.",
    }),
});

export const TaskRefSchema = z.object({ taskId: TaskIdSchema }).openapi("TaskRef");

export const TaskErrorRefSchema = withOpenApi(TaskErrorSchema, "TaskError", { description: "Why a task (or an attempt) ended otherwise than COMPLETED." });

/** Every field of a task's record as the client reads it (`handle.status()`); times are ms since the epoch. */
export const TaskSchema = z
  .object({
    taskId: TaskIdSchema,
    queue: QueueNameSchema,
    status: TaskStatusSchema,
    agent: z.string().openapi({ description: "The agent's (or swarm's) name." }),
    inputPreview: z
      .string()
      .optional()
      .openapi({ description: "The first characters of its input on one line (a string as it is, else its JSON), for lists; absent when none is kept." }),
    attempt: z.number().int().openapi({ description: "The current attempt's number (0 before its first start)." }),
    workerId: z.string().optional().openapi({ description: "The worker running (or that last ran) it." }),
    createdAt: z.number().int(),
    startedAt: z.number().int().optional().openapi({ description: "When the current attempt started." }),
    completedAt: z.number().int().optional(),
    /** What it returned (COMPLETED). Not described in the document: a described copy of the JSON schema is inlined, not referenced. */
    result: JsonValueSchema.optional(),
    error: TaskErrorRefSchema.optional(),
    retries: z.number().int().openapi({ description: "Retries used so far." }),
    maxRetries: z.number().int(),
    maxDeliveries: z.number().int().openapi({ description: "Attempts started at most, counting crash reclaims (0: no limit)." }),
    retryAt: z.number().int().optional().openapi({ description: "When the next attempt is due (RETRYING)." }),
    runAt: z.number().int().optional().openapi({ description: "When a delayed task falls due: PENDING until then." }),
    priority: PrioritySchema,
    timeoutMs: z.number().int().optional().openapi({ description: "Its per-attempt timeout." }),
    detailed: z.boolean().openapi({ description: "Whether it keeps every event type (else only status, text and progress)." }),
    metadata: z.record(z.string(), JsonValueSchema),
    cancelRequestedAt: z.number().int().optional(),
    cancelReason: z.string().optional(),
    waitMs: z.number().int().optional().openapi({ description: "How long it waited before it first started." }),
    durationMs: z.number().int().optional().openapi({ description: "How long its last attempt ran." }),
    seq: z.number().int().openapi({ description: "The seq of its last event." }),
    usage: TokenUsageSchema.optional().openapi({ description: "Token totals of the attempt that ended it." }),
    concurrencyKey: z.string().optional(),
    concurrencyLimit: z.number().int().optional(),
    parked: z.boolean().optional().openapi({ description: "true while it waits for a slot of its concurrency key." }),
    waiting: WaitRequestSchema.optional().openapi({ description: "While WAITING: the signal it waits for, for which tool call, until when." }),
  })
  .openapi("Task");

export const ListTasksQuery = z.object({
  queue: QueueNameSchema.optional(),
  status: TaskStatusSchema.optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  cursor: z.string().max(512).optional(),
});

export const TaskPageSchema = z.object({ tasks: z.array(TaskSchema), nextCursor: z.string().optional() }).openapi("TaskPage");

export const ResultQuery = z.object({
  timeoutMs: z.coerce
    .number()
    .int()
    .min(0)
    .optional()
    .openapi({ description: "How long to wait for the task to end (default 30000, at most the gateway's maxResultTimeoutMs)." }),
});

export const ResultSchema = z.object({ taskId: TaskIdSchema, status: z.literal("COMPLETED"), result: JsonValueSchema }).openapi("TaskResult");

export const PendingResultSchema = z.object({ taskId: TaskIdSchema, status: TaskStatusSchema }).openapi("TaskNotDone");

export const EventsQuery = z.object({
  after: z.coerce.number().int().min(0).optional().openapi({ description: "Resume after this seq (the `Last-Event-ID` header wins when both are given)." }),
});

export const EventsHeaders = z.object({
  "last-event-id": z
    .string()
    .regex(/^\d+$/, "the seq of the last event received")
    .optional()
    .openapi({ param: { name: "last-event-id", in: "header" } }),
});

export const CancelRequestSchema = z
  .object({ reason: z.string().max(1000).optional() })
  .strict()
  .openapi("CancelRequest");

export const CancelResponseSchema = z
  .object({
    taskId: TaskIdSchema,
    outcome: z.enum(["cancelled", "requested", "finished"]).openapi({
      description: "`cancelled`: it was waiting and will never run; `requested`: it is running and its worker aborts it; `finished`: it had ended already.",
    }),
    status: TaskStatusSchema.optional(),
  })
  .openapi("CancelOutcome");

export const SignalRequestSchema = z.object({ name: SignalNameSchema, payload: JsonValueSchema.optional() }).strict().openapi("SignalRequest");

export const SignalResponseSchema = z.object({ taskId: TaskIdSchema, signal: z.string() }).openapi("SignalSent");

export const MessageRequestSchema = z
  .object({ message: z.string().min(1).openapi({ description: "What to tell the running agent: it joins the conversation at its next turn boundary." }) })
  .strict()
  .openapi("MessageRequest");

export const MessageResponseSchema = z
  .object({
    taskId: TaskIdSchema,
    messageId: z.string().openapi({ description: "The `messageId` of the `user-message` event that marks where it joined." }),
    waiting: z.number().int().openapi({ description: "Messages waiting for the run's next turn boundary, this one included." }),
  })
  .openapi("MessageSent");

export const QueueOverviewSchema = z
  .object({
    queue: QueueNameSchema,
    waiting: z.number().openapi({ description: "Entries waiting to be claimed." }),
    lanes: z.object({ high: z.number(), normal: z.number(), low: z.number() }).openapi({ description: "Waiting entries per lane." }),
    inFlight: z.number().openapi({ description: "Claimed and not yet done." }),
    delayed: z.number().openapi({ description: "Held back for a retry or a scheduled start." }),
    dead: z.number().openapi({ description: "Entries in its dead letters." }),
    oldestWaitMs: z.number().openapi({ description: "How long the oldest waiting entry has waited (0 when none waits)." }),
    recent: z
      .object({ completed: z.number(), failed: z.number(), cancelled: z.number(), retried: z.number(), windowMs: z.number() })
      .openapi({ description: "Outcomes recorded over the last `windowMs`." }),
    waitP95Ms: z.number().optional().openapi({ description: "95th percentile of how long its tasks waited before they first started, over that window." }),
    workers: z
      .number()
      .openapi({ description: "Live workers serving the queue now. 0 with tasks waiting: nothing will start them until a worker serving it joins." }),
  })
  .openapi("QueueOverview");

export const QueuesSchema = z.object({ queues: z.array(QueueOverviewSchema) }).openapi("Queues");

export const WorkersSchema = z
  .object({
    workers: z.array(
      // What each worker's heartbeat says (a dead worker's record may be gone: then only the id, last beat and alive).
      WorkerRecordSchema.partial().extend({ workerId: z.string(), lastBeat: z.number(), alive: z.boolean() }).openapi("Worker"),
    ),
    live: z.number(),
    dead: z.number(),
    running: z.number(),
    at: z.number(),
  })
  .openapi("Workers");

const AlertSchema = z
  .object({
    id: z.string(),
    rule: z.string(),
    severity: z.enum(["warning", "critical"]),
    state: z.enum(["firing", "resolved"]),
    queue: z.string(),
    message: z.string(),
    value: z.number(),
    threshold: z.number(),
    since: z.number(),
    at: z.number(),
  })
  .openapi("Alert");

export const AlertsSchema = z.object({ events: z.array(AlertSchema), firing: z.array(AlertSchema) }).openapi("Alerts");

export const AlertsQuery = z.object({ count: z.coerce.number().int().min(1).max(1000).optional() });

export const DeadLetterSchema = z
  .object({
    id: z.string(),
    queue: QueueNameSchema,
    priority: PrioritySchema,
    entryId: z.string(),
    taskId: z.string().optional(),
    reason: z.string(),
    fields: z.record(z.string(), z.string()).nullable(),
    at: z.number(),
    // Parsed from JSON, so JSON values; typed as the client types it (unknown), described as JSON.
    extra: z.record(z.string(), z.unknown()).openapi({ additionalProperties: { $ref: "#/components/schemas/JsonValue" } }),
  })
  .openapi("DeadLetter");

export const DeadLettersQuery = z.object({
  count: z.coerce.number().int().min(1).max(1000).optional(),
  after: z.string().max(64).optional().openapi({ description: "Page on after this dead letter id." }),
});

export const DeadLettersSchema = z.object({ deadLetters: z.array(DeadLetterSchema) }).openapi("DeadLetters");

export const PurgedSchema = z.object({ queue: QueueNameSchema, purged: z.number().int() }).openapi("Purged");
