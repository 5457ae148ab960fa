// A run that stops to wait for a signal, and the same run carried on: the loop's SuspendedRun as
// the JSON a task keeps (checked when read back: it comes from Redis), and the request it shows.
import {
  CorruptRecordError,
  type JsonValue,
  JsonValueSchema,
  MessageSchema,
  parseStored,
  type Resumption,
  TaskSuspended,
  TokenUsageSchema,
  WaitOptionsSchema,
  type WaitRequest,
} from "@flotilla/core";
import { z } from "zod";
import type { SuspendedRun } from "./loop.ts";

const OutputSchema = z.object({ result: JsonValueSchema, isError: z.boolean() });
const SignalOutcomeSchema = z.union([z.object({ payload: JsonValueSchema }), z.object({ timedOut: z.literal(true) })]);

const SuspendedRunSchema = z.object({
  messages: z.array(MessageSchema).min(1),
  beforeTurn: z.boolean().optional(),
  agent: z.string(),
  at: z.number().int().min(0),
  agentSteps: z.number().int().min(0),
  steps: z.number().int().min(0),
  usage: TokenUsageSchema,
  results: z.record(z.string(), OutputSchema),
  signals: z.record(z.string(), z.record(z.string(), SignalOutcomeSchema)),
  waits: z
    .array(
      z.object({
        toolCallId: z.string(),
        tool: z.string(),
        signal: z.string(),
        kind: z.enum(["approval", "signal", "rate-limit"]),
        options: WaitOptionsSchema,
      }),
    )
    .min(1),
});

/** The request a stopped run shows: its first waiting call's signal, tool and arguments (none before a model turn). */
function requestOf(run: SuspendedRun): WaitRequest {
  const wait = run.waits[0]!;
  const last = run.messages.at(-1);
  const call = !run.beforeTurn && last?.role === "assistant" ? last.toolCalls?.find((c) => c.toolCallId === wait.toolCallId) : undefined;
  const { timeoutMs, onTimeout, request } = wait.options;
  return {
    name: wait.signal,
    kind: wait.kind,
    ...(!run.beforeTurn && { toolCallId: wait.toolCallId, tool: wait.tool }),
    ...(call && { args: call.args }),
    ...(request !== undefined && { request }),
    ...(timeoutMs !== undefined && { timeoutMs }),
    onTimeout: onTimeout ?? "fail",
  };
}

/** What run.stream throws when the loop stopped to wait: the request to show, the state to keep. */
export function suspended(run: SuspendedRun): TaskSuspended {
  return new TaskSuspended(requestOf(run), run as unknown as JsonValue);
}

/**
 * The point to carry on from: the saved state, with how its first wait ended added to that call's
 * signals (the signal's payload, or timed out when none came).
 */
export function resumePoint(resumption: Resumption): SuspendedRun {
  const run = parseStored(SuspendedRunSchema, resumption.state, "saved run state") as SuspendedRun;
  const wait = run.waits[0]!;
  const { signal } = resumption;
  if (signal && signal.name !== wait.signal) {
    throw new CorruptRecordError("saved run state", `it waits for signal "${wait.signal}", and was resumed by "${signal.name}"`);
  }
  const ended = signal ? { payload: signal.payload } : { timedOut: true as const };
  return { ...run, signals: { ...run.signals, [wait.toolCallId]: { ...run.signals[wait.toolCallId], [wait.signal]: ended } } };
}
