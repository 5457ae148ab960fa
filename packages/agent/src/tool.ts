import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import {
  type AgentSpec,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  readApproval,
  SignalNameSchema,
  toTaskError,
  UnrecoverableError,
  ValidationError,
  WaitForSignal,
  type WaitOptions,
  WaitOptionsSchema,
} from "@flotilla/core";
import type { EventOf } from "@flotilla/events";
import { z } from "zod";
import { handoffDefinition, type SignalOutcome, type ToolCall, type ToolOutput, unknownToolResult } from "./steps.ts";
import { toolOutputOf } from "./tool-result.ts";

export interface ToolContext {
  /** Aborted when the task is cancelled, times out or the worker shuts down. */
  signal: AbortSignal;
  taskId: string;
  attempt: number;
  /**
   * Reports the tool's progress: a `progress` event `{ toolCallId, name, data }` on the task's
   * stream, in order with the rest (after this call's `tool_call`, before its `tool_result`), kept
   * for tasks submitted with `detailed: false` too. `data` is any JSON; anything else (a function,
   * `undefined`, a cycle) is a ValidationError. Calls after the tool returned are ignored.
   */
  progress(data: JsonValue): void;
  /**
   * Waits for signal `name` (sent with `handle.signal(name, payload)` from any process) and returns
   * its payload. The task does not hold a worker meanwhile: it becomes WAITING, and when the signal
   * comes it resumes on any worker, where this tool call runs again from its start and this time
   * `waitForSignal` returns at once. So do before it only what may run twice. Returns undefined
   * when `timeoutMs` passed and `onTimeout` is `"continue"`. Let what it throws pass (do not catch it).
   */
  waitForSignal(name: string, options?: WaitOptions): Promise<JsonValue | undefined>;
}

/** How a tool that needs approval waits for it (`approval: true` takes every default). */
export interface ApprovalOptions extends Omit<WaitOptions, "request"> {
  /** The signal that answers it: `handle.approve()` / `handle.reject(reason)` send `"approval"`. @default "approval" */
  signal?: string | undefined;
}

/** A tool's progress event, before the worker stamps it. */
export type ProgressEvent = Omit<EventOf<"progress">, "taskId" | "seq" | "attempt" | "ts" | "agent">;

/** What the executor gives one tool call: the run's signal and ids, and where its progress events go. */
export interface ToolCallContext {
  signal: AbortSignal;
  taskId: string;
  attempt: number;
  /** Receives the call's progress events while it runs. @default they are dropped */
  onProgress?: ((event: ProgressEvent) => void) | undefined;
  /** The signals this call waited for so far, by name, when its task resumed (see `waitForSignal`). */
  signals?: Readonly<Record<string, SignalOutcome>> | undefined;
}

/** A tool the worker registers by name; tasks refer to it by that name only. */
export interface Tool<S extends z.ZodType = z.ZodType, R extends JsonValue = JsonValue> {
  name: string;
  description: string;
  inputSchema: S;
  execute(args: z.output<S>, context: ToolContext): Promise<R> | R;
  /** The fleet-wide rate limit each call draws one request from before it runs (configured on the workers by this name). */
  rateLimit?: string;
  /**
   * A person must approve each call before it runs: the task waits (WAITING, no worker held) for the
   * approval signal, with the call's arguments shown as the request. Approved, the tool runs;
   * rejected, it does not, and the model is told why and decides what to do.
   * @default false
   */
  approval?: boolean | ApprovalOptions;
}

/** Checks a tool's name (what models and agents call it by); throws a ValidationError naming `name`. */
export function defineTool<S extends z.ZodType, R extends JsonValue>(tool: Tool<S, R>): Tool<S, R> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) throw ValidationError.of("tool", "name", `"${tool.name}" must be 1 to 64 letters, digits, _ or -`);
  if (typeof tool.approval === "object") approvalOf(tool);
  return tool;
}

/** The approval a tool needs, with its defaults applied, or undefined when it needs none. */
export function approvalOf(tool: Tool): { signal: string; timeoutMs?: number; onTimeout: "fail" | "continue" } | undefined {
  if (!tool.approval) return undefined;
  const options = tool.approval === true ? {} : tool.approval;
  const signal = SignalNameSchema.safeParse(options.signal ?? "approval");
  if (!signal.success) throw ValidationError.of("tool", "approval.signal", signal.error.issues[0]!.message);
  const wait = WaitOptionsSchema.safeParse({ timeoutMs: options.timeoutMs, onTimeout: options.onTimeout });
  if (!wait.success) throw ValidationError.of("tool", `approval.${wait.error.issues[0]!.path.join(".")}`, wait.error.issues[0]!.message);
  return { signal: signal.data, ...(wait.data.timeoutMs !== undefined && { timeoutMs: wait.data.timeoutMs }), onTimeout: wait.data.onTimeout ?? "fail" };
}

/**
 * The gate of a tool that needs approval: undefined when the call may run (approved), the answer the
 * model gets when it may not (rejected, or the wait timed out with `onTimeout: "continue"`). Before
 * the approval came it throws WaitForSignal, and the run stops to wait for it.
 */
export function approvalGate(tool: Tool | undefined, call: ToolCall, signals: Readonly<Record<string, SignalOutcome>> | undefined): ToolOutput | undefined {
  const approval = tool && approvalOf(tool);
  if (!approval) return undefined;
  const outcome = signals && Object.hasOwn(signals, approval.signal) ? signals[approval.signal] : undefined;
  if (!outcome) throw new WaitForSignal(approval.signal, "approval", { timeoutMs: approval.timeoutMs, onTimeout: approval.onTimeout });
  if ("timedOut" in outcome) {
    if (approval.onTimeout === "fail") {
      throw new UnrecoverableError(`tool ${call.name} was not approved within ${approval.timeoutMs} ms`, ErrorCodes.SIGNAL_TIMEOUT);
    }
    return { result: `not run: no approval came within ${approval.timeoutMs} ms`, isError: true };
  }
  const decision = readApproval(outcome.payload);
  if (decision.approved) return undefined;
  return { result: `not run: rejected${decision.reason ? `: ${decision.reason}` : ""}`, isError: true };
}

/** Tools as a worker registers them: by name in a Map or a record, or an array (each by its own name). */
export type ToolRegistry = ReadonlyMap<string, Tool> | Readonly<Record<string, Tool>> | readonly Tool[];

export function lookupTool(registry: ToolRegistry | undefined, name: string): Tool | undefined {
  if (!registry) return undefined;
  if (registry instanceof Map) return registry.get(name);
  if (Array.isArray(registry)) return (registry as readonly Tool[]).find((tool) => tool.name === name);
  return Object.hasOwn(registry, name) ? (registry as Record<string, Tool>)[name] : undefined;
}

/** The tools an agent names, from the worker's registry; one the worker lacks is an UNKNOWN_TOOL error. */
export function resolveTools(agent: AgentSpec, registry: ToolRegistry | undefined): Tool[] {
  return agent.tools.map((name) => {
    const tool = lookupTool(registry, name);
    if (!tool) throw new FlotillaError(ErrorCodes.UNKNOWN_TOOL, `agent "${agent.name}" uses tool "${name}", which this worker does not register`);
    return tool;
  });
}

/** A tool as the model is told about it: its name, description and input as JSON Schema. */
export function toolDefinition(tool: Tool): LanguageModelV4FunctionTool {
  const { $schema: _, ...schema } = z.toJSONSchema(tool.inputSchema, { io: "input", target: "draft-7" }) as Record<string, unknown>;
  return { type: "function", name: tool.name, description: tool.description, inputSchema: schema as LanguageModelV4FunctionTool["inputSchema"] };
}

/** The tools a turn offers the model: the agent's, and the handoff tool when it may hand over. */
export function toolDefinitions(tools: readonly Tool[], handoffTargets: readonly string[]): LanguageModelV4FunctionTool[] {
  const definitions = tools.map(toolDefinition);
  if (handoffTargets.length > 0) definitions.push(handoffDefinition(handoffTargets));
  return definitions;
}

/**
 * Runs one tool call with the run's signal. A failure becomes an error result for the model, but
 * for an UnrecoverableError, which is thrown on: it ends the task (FAILED, not retried).
 */
export async function runToolCall(tool: Tool | undefined, call: ToolCall, context: ToolCallContext): Promise<ToolOutput> {
  if (!tool) return unknownToolResult(call.name);
  const args = tool.inputSchema.safeParse(call.args);
  if (!args.success) return { result: `invalid arguments: ${args.error.issues[0]?.message}`, isError: true };
  let running = true;
  const { onProgress, signals, ...ids } = context;
  const progress = (data: JsonValue) => {
    const json = asJson(data);
    if (running) onProgress?.({ type: "progress", toolCallId: call.toolCallId, name: call.name, data: json });
  };
  const waitForSignal = async (name: string, options: WaitOptions = {}): Promise<JsonValue | undefined> => {
    const checked = SignalNameSchema.safeParse(name);
    if (!checked.success) throw ValidationError.of("waitForSignal", "name", checked.error.issues[0]!.message);
    const wait = WaitOptionsSchema.safeParse(options);
    if (!wait.success) throw ValidationError.of("waitForSignal", wait.error.issues[0]!.path.join("."), wait.error.issues[0]!.message);
    const delivered = signals && Object.hasOwn(signals, name) ? signals[name] : undefined;
    if (delivered) {
      if ("payload" in delivered) return delivered.payload;
      if ((wait.data.onTimeout ?? "fail") === "continue") return undefined;
      throw new UnrecoverableError(`no signal "${name}" came within ${wait.data.timeoutMs} ms`, ErrorCodes.SIGNAL_TIMEOUT);
    }
    throw new WaitForSignal(name, "signal", wait.data);
  };
  try {
    const result: unknown = await tool.execute(args.data, { ...ids, progress, waitForSignal });
    return toolOutputOf(call.name, result);
  } catch (err) {
    if (context.signal.aborted) throw context.signal.reason;
    if (err instanceof UnrecoverableError || err instanceof WaitForSignal) throw err;
    return { result: toTaskError(err, ErrorCodes.TOOL_ERROR).message, isError: true };
  } finally {
    running = false;
  }
}

/** `data` as JSON (a copy, as a reader will see it), or a ValidationError for what JSON cannot hold. */
function asJson(data: JsonValue): JsonValue {
  let text: string | undefined;
  try {
    text = JSON.stringify(data);
  } catch (err) {
    throw ValidationError.of("progress", "data", `is not JSON: ${(err as Error).message}`);
  }
  if (text === undefined) throw ValidationError.of("progress", "data", `is not JSON (${typeof data})`);
  return JSON.parse(text) as JsonValue;
}
