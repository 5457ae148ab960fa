// Human in the loop: a run that needs a signal (an approval, an answer) stops and waits for it
// without holding a worker. Pure (no I/O): the agent runtime, the worker, the store's readers and
// Temporal's workflow sandbox share these shapes.
import { z } from "zod";
import type { JsonValue } from "./schemas.ts";
import { JsonValueSchema } from "./schemas.ts";

/** A signal's name: what `handle.signal(name, payload)` and `waitForSignal(name)` agree on. */
export const SignalNameSchema = z.string().regex(/^[A-Za-z0-9_.:-]{1,128}$/, "must be 1 to 128 letters, digits, _ . : or -");

/** What happens when a wait's `timeoutMs` passes with no signal. */
export const OnTimeoutSchema = z.enum(["fail", "continue"]);
export type OnTimeout = z.infer<typeof OnTimeoutSchema>;

/** What a tool asks to wait for (`approval` on the tool, or its own `waitForSignal`). */
export interface WaitOptions {
  /**
   * How long to wait for the signal (ms); none: as long as it takes (the task stays WAITING).
   * @default undefined
   */
  timeoutMs?: number | undefined;
  /**
   * `"fail"`: the task ends FAILED (SIGNAL_TIMEOUT). `"continue"`: the run carries on without it
   * (`waitForSignal` returns undefined; an approval counts as rejected, and the model is told).
   * @default "fail"
   */
  onTimeout?: OnTimeout | undefined;
  /** What is asked, as JSON, shown on the task's status and stream (a question, a summary). */
  request?: JsonValue | undefined;
}

export const WaitOptionsSchema = z.object({
  timeoutMs: z.number().int().positive().optional(),
  onTimeout: OnTimeoutSchema.optional(),
  request: JsonValueSchema.optional(),
});

/**
 * The request a WAITING task shows on its record and its `waiting` status event: which signal it
 * waits for, for which tool call, until when.
 */
export const WaitRequestSchema = z.object({
  /** The signal that resumes it. */
  name: SignalNameSchema,
  /**
   * `approval`: a tool that needs approval before it runs; `signal`: a tool's own `waitForSignal`;
   * `rate-limit`: a model turn or tool call whose rate limit releases the worker's slot rather than
   * wait on it (it comes back by itself when the limit can grant: its `timeoutMs`).
   */
  kind: z.enum(["approval", "signal", "rate-limit"]),
  /** The tool call that waits, and its tool and arguments (none for a model turn). */
  toolCallId: z.string().optional(),
  tool: z.string().optional(),
  args: JsonValueSchema.optional(),
  /** What is asked (the tool's `request`). */
  request: JsonValueSchema.optional(),
  timeoutMs: z.number().int().positive().optional(),
  onTimeout: OnTimeoutSchema,
  /** When the wait times out (ms, Redis's clock): set by the store. */
  timeoutAt: z.number().optional(),
});
export type WaitRequest = z.infer<typeof WaitRequestSchema>;

/** A signal as a WAITING task received it (kept on its record until the run it resumed ends or waits again). */
export const SignalDeliverySchema = z.object({ name: SignalNameSchema, payload: JsonValueSchema, at: z.number() });
export type SignalDelivery = z.infer<typeof SignalDeliverySchema>;

/** An approval's answer: `true` / `false`, or `{ approved, reason? }` (what `handle.approve()` / `reject()` send). */
export const ApprovalSchema = z.union([z.boolean(), z.object({ approved: z.boolean(), reason: z.string().optional() })]);

/** The approval `payload` says, or a rejection naming what is wrong with it. */
export function readApproval(payload: JsonValue): { approved: boolean; reason?: string } {
  const parsed = ApprovalSchema.safeParse(payload);
  if (!parsed.success) return { approved: false, reason: `unreadable approval (${parsed.error.issues[0]?.message}); send true, false or { approved, reason }` };
  return typeof parsed.data === "boolean" ? { approved: parsed.data } : parsed.data;
}

/**
 * Thrown where a run must stop until a signal comes: by a tool's `waitForSignal` (or its approval
 * gate) before the signal arrived. The tool loop catches it, lets the turn's other tool calls
 * finish, and stops the run as a TaskSuspended. A tool must let it pass (not catch it).
 */
export class WaitForSignal extends Error {
  readonly signal: string;
  readonly kind: WaitRequest["kind"];
  readonly options: WaitOptions;

  constructor(signal: string, kind: WaitRequest["kind"], options: WaitOptions = {}) {
    super(`waiting for signal "${signal}"`);
    this.name = "WaitForSignal";
    this.signal = signal;
    this.kind = kind;
    this.options = options;
  }
}

/**
 * Thrown by an executor whose run stopped to wait for a signal: the worker records the task
 * WAITING with `request`, keeps `state` (the run's saved tool-loop state, JSON) and frees the slot.
 * When the signal comes (or the wait times out), the task starts again on any worker and the
 * executor is given `state` and the signal to carry on from there.
 */
export class TaskSuspended extends Error {
  readonly request: WaitRequest;
  readonly state: JsonValue;

  constructor(request: WaitRequest, state: JsonValue) {
    super(`waiting for signal "${request.name}"`);
    this.name = "TaskSuspended";
    this.request = request;
    this.state = state;
  }
}

/** What a resumed attempt is given: the state its run saved, and the signal that resumed it (none: the wait timed out). */
export interface Resumption {
  state: JsonValue;
  signal?: SignalDelivery | undefined;
}
