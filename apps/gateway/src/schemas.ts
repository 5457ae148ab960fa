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
  TaskIdSchema,
  TaskStatusSchema,
} from "@flotilla/core";
import { z } from "@hono/zod-openapi";
import { withOpenApi } from "./openapi-meta.ts";

// JSON is recursive: named, it becomes one `$ref` component instead of an endless inline schema. (This
// sets OpenAPI metadata on core's schema object, which the generator reads; validation is unchanged.)
withOpenApi(JsonValueSchema, "JsonValue", { description: "Any JSON value." });

export const ErrorSchema = z
  .object({
    error: z.object({
      code: z.string().openapi({ example: "VALIDATION_ERROR" }),
      message: z.string(),
      field: z.string().optional().openapi({ description: "The offending field, on a VALIDATION_ERROR." }),
      details: z.record(z.string(), z.unknown()).optional(),
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

const TaskErrorSchema = z.object({ message: z.string(), code: z.string() });

export const TaskSchema = z
  .object({
    taskId: TaskIdSchema,
    queue: QueueNameSchema,
    status: TaskStatusSchema,
    agent: z.string(),
    attempt: z.number().int(),
    workerId: z.string().optional(),
    createdAt: z.number().int(),
    startedAt: z.number().int().optional(),
    completedAt: z.number().int().optional(),
    result: JsonValueSchema.optional(),
    error: TaskErrorSchema.optional(),
    retries: z.number().int(),
    maxRetries: z.number().int(),
    priority: PrioritySchema,
    metadata: z.record(z.string(), JsonValueSchema),
    seq: z.number().int().openapi({ description: "The seq of its last event." }),
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

export const QueuesSchema = z
  .object({
    queues: z.array(
      z.object({
        queue: QueueNameSchema,
        waiting: z.number(),
        inFlight: z.number(),
        delayed: z.number(),
        dead: z.number(),
        oldestWaitMs: z.number(),
      }),
    ),
  })
  .openapi("Queues");

export const WorkersSchema = z
  .object({
    workers: z.array(
      // What each worker's heartbeat says (a dead worker's record may be gone: then only the id, last beat and alive).
      WorkerRecordSchema.partial().extend({ workerId: z.string(), lastBeat: z.number(), alive: z.boolean() }),
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
    extra: z.record(z.string(), z.unknown()),
  })
  .openapi("DeadLetter");

export const DeadLettersQuery = z.object({
  count: z.coerce.number().int().min(1).max(1000).optional(),
  after: z.string().max(64).optional().openapi({ description: "Page on after this dead letter id." }),
});

export const DeadLettersSchema = z.object({ deadLetters: z.array(DeadLetterSchema) }).openapi("DeadLetters");

export const PurgedSchema = z.object({ queue: QueueNameSchema, purged: z.number().int() }).openapi("Purged");
