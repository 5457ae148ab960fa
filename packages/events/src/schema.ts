import { JsonValueSchema, SignalNameSchema, TaskErrorSchema, TokenUsageSchema, WaitRequestSchema } from "@flotilla/core";
import { z } from "zod";

const base = {
  taskId: z.string(),
  /** Strictly increasing per task, starting at 1, with no gap. */
  seq: z.number().int().positive(),
  /** The attempt that produced the event (1 for the first run). */
  attempt: z.number().int().min(0),
  /** Milliseconds since the epoch, when the worker produced it. */
  ts: z.number(),
  /** The agent's name. */
  agent: z.string(),
};

export const UsageSchema = TokenUsageSchema;
export type Usage = z.infer<typeof UsageSchema>;

export const EventStatusSchema = z.enum(["pending", "running", "completed", "failed", "cancelled", "retrying", "waiting"]);
export type EventStatus = z.infer<typeof EventStatusSchema>;

export const StatusEventSchema = z.object({
  ...base,
  type: z.literal("status"),
  status: EventStatusSchema,
  workerId: z.string().optional(),
  /** On a `running` event of a task reclaimed after its lease lapsed: the worker that held it before. */
  takenOverFrom: z.string().optional(),
  result: JsonValueSchema.optional(),
  error: TaskErrorSchema.optional(),
  /** On a `waiting` event: the signal the task waits for, and for what (see `handle.signal`). */
  waiting: WaitRequestSchema.optional(),
  /** On the `pending` event of a WAITING task that a signal resumed: the signal's name. */
  signal: SignalNameSchema.optional(),
});
export const TextEventSchema = z.object({ ...base, type: z.literal("text"), delta: z.string() });
export const ToolCallEventSchema = z.object({
  ...base,
  type: z.literal("tool_call"),
  toolCallId: z.string(),
  name: z.string(),
  args: JsonValueSchema,
});
export const ToolResultEventSchema = z.object({
  ...base,
  type: z.literal("tool_result"),
  toolCallId: z.string(),
  name: z.string(),
  result: JsonValueSchema,
  isError: z.boolean(),
});
export const StepEventSchema = z.object({
  ...base,
  type: z.literal("step"),
  index: z.number().int().min(0),
  finishReason: z.string(),
  usage: UsageSchema.optional(),
});
export const UsageEventSchema = z.object({ ...base, type: z.literal("usage"), ...UsageSchema.shape });
export const HandoffEventSchema = z.object({
  ...base,
  type: z.literal("handoff"),
  from: z.string(),
  to: z.string(),
  reason: z.string().optional(),
});
/**
 * A tool's report on its own progress (`ctx.progress(data)` in the tool), between its call's
 * `tool_call` and `tool_result`: `toolCallId` and `name` say which call, as theirs do; `data` is
 * whatever JSON the tool reports (a fraction, `{ done, total }`, a line of status).
 */
export const ProgressEventSchema = z.object({
  ...base,
  type: z.literal("progress"),
  toolCallId: z.string(),
  name: z.string(),
  data: JsonValueSchema,
});
/**
 * A message sent to the running task (`handle.send`) joined its conversation here, at a turn
 * boundary: the model's next turn sees it. `messageId` is the id `send` returned.
 */
export const UserMessageEventSchema = z.object({ ...base, type: z.literal("user-message"), messageId: z.string(), content: z.string() });
export const ErrorEventSchema = z.object({ ...base, type: z.literal("error"), message: z.string(), code: z.string() });
export const CustomEventSchema = z.object({ ...base, type: z.literal("custom"), name: z.string(), data: JsonValueSchema });

/** Every event a task can produce, discriminated on `type`. */
export const FlotillaEventSchema = z.discriminatedUnion("type", [
  StatusEventSchema,
  TextEventSchema,
  ToolCallEventSchema,
  ToolResultEventSchema,
  StepEventSchema,
  UsageEventSchema,
  HandoffEventSchema,
  ProgressEventSchema,
  UserMessageEventSchema,
  ErrorEventSchema,
  CustomEventSchema,
]);
export type FlotillaEvent = z.infer<typeof FlotillaEventSchema>;
export type EventType = FlotillaEvent["type"];
export type EventOf<T extends EventType> = Extract<FlotillaEvent, { type: T }>;

type Stamp = "taskId" | "seq" | "attempt" | "ts" | "agent";
type Body<E> = E extends unknown ? Omit<E, Stamp> : never;
/** An event as an agent emits it; the worker stamps taskId, seq, attempt, ts and agent. */
export type AgentEvent = Body<FlotillaEvent>;

const TERMINAL_EVENT_STATUSES: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);

/** The status event that ends a task's stream. */
export const isTerminalEvent = (e: FlotillaEvent): e is EventOf<"status"> => e.type === "status" && TERMINAL_EVENT_STATUSES.has(e.status);

/**
 * Types kept when a task is submitted with `detailed: false`: what a user is shown (status, the
 * answer as it streams, the progress tools report, as a job's progress is in BullMQ, and the messages
 * sent to it where they joined), not how
 * the agent works (its tool calls, steps, usage).
 */
const SUMMARY_TYPES: ReadonlySet<EventType> = new Set(["status", "text", "progress", "user-message"]);
export const keepsEvent = (detailed: boolean, type: EventType): boolean => detailed || SUMMARY_TYPES.has(type);
