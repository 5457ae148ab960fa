// What the data line of each Server-Sent Event carries, as named schemas of the OpenAPI document: a
// task's events (`GET /v1/tasks/{id}/events`, the events package's own schema) and the fleet's
// lifecycle (`GET /v1/events`, `client.watch()`'s events). An event stream's body is text, so the
// routes cannot point at these: they are components for a code generator to type the parsed data with.
import { type WatchEvent, WorkerRecordSchema } from "@flotilla/client";
import { TaskStatusSchema } from "@flotilla/core";
import { FlotillaEventSchema } from "@flotilla/events";
import { z } from "@hono/zod-openapi";
import { withOpenApi } from "./openapi-meta.ts";
import { TaskErrorRefSchema } from "./schemas.ts";

export const TaskEventSchema = withOpenApi(FlotillaEventSchema, "TaskEvent", {
  description: "The data of one message of `GET /v1/tasks/{id}/events` (its `event:` line is the `type`).",
});

const { state: WorkerStateSchema, reasons: ReasonsSchema } = WorkerRecordSchema.shape;
const at = z.number().openapi({ description: "When it happened (ms since the epoch)." });
const queue = z.string();
const taskId = z.string();

export const FleetEventSchema = z
  .union([
    z.object({ type: z.literal("task.submitted"), queue, taskId, at }),
    z.object({ type: z.literal("task.started"), queue, taskId, attempt: z.number().int(), workerId: z.string().optional(), at }),
    z.object({
      type: z.literal("task.finished"),
      queue,
      taskId,
      status: z.enum(["COMPLETED", "FAILED", "CANCELLED"]),
      attempt: z.number().int(),
      error: TaskErrorRefSchema.optional(),
      at,
    }),
    z.object({ type: z.literal("task.status"), queue, taskId, status: TaskStatusSchema, attempt: z.number().int(), at }),
    z.object({
      type: z.literal("worker.joined"),
      workerId: z.string(),
      hostname: z.string().optional(),
      queues: z.array(z.string()),
      state: WorkerStateSchema,
      at,
    }),
    z.object({ type: z.literal("worker.left"), workerId: z.string(), reason: z.enum(["stopped", "dead"]), at }),
    z.object({ type: z.literal("worker.state"), workerId: z.string(), state: WorkerStateSchema.unwrap(), reasons: ReasonsSchema.unwrap(), at }),
    z.object({ type: z.literal("run.started"), runId: z.string(), graph: z.string(), at }),
    z.object({ type: z.literal("run.finished"), runId: z.string(), graph: z.string(), status: z.enum(["SUCCEEDED", "FAILED", "CANCELLED"]), at }),
    z.object({
      type: z.literal("watch.lagged"),
      dropped: z.number().int().openapi({ description: "This many of the oldest were dropped: the reader fell behind." }),
      at,
    }),
  ])
  .openapi("FleetEvent", { description: "The data of one message of `GET /v1/events` (its `event:` line is the `type`)." });

/** Compiles only while the schema and `client.watch()`'s events are the same shapes, both ways. */
export type FleetEventDescribed = [WatchEvent] extends [z.output<typeof FleetEventSchema>]
  ? [z.output<typeof FleetEventSchema>] extends [WatchEvent]
    ? true
    : never
  : never;
