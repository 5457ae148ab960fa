import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import { type AgentSpec, ErrorCodes, FlotillaError, type JsonValue, toTaskError, UnrecoverableError, ValidationError } from "@flotilla/core";
import type { EventOf } from "@flotilla/events";
import { z } from "zod";
import { handoffDefinition, type ToolCall, type ToolOutput, unknownToolResult } from "./steps.ts";
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
}

/** A tool the worker registers by name; tasks refer to it by that name only. */
export interface Tool<S extends z.ZodType = z.ZodType, R extends JsonValue = JsonValue> {
  name: string;
  description: string;
  inputSchema: S;
  execute(args: z.output<S>, context: ToolContext): Promise<R> | R;
  /** The fleet-wide rate limit each call draws one request from before it runs (configured on the workers by this name). */
  rateLimit?: string;
}

/** Checks a tool's name (what models and agents call it by); throws a ValidationError naming `name`. */
export function defineTool<S extends z.ZodType, R extends JsonValue>(tool: Tool<S, R>): Tool<S, R> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) throw ValidationError.of("tool", "name", `"${tool.name}" must be 1 to 64 letters, digits, _ or -`);
  return tool;
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
  const { onProgress, ...ids } = context;
  const progress = (data: JsonValue) => {
    const json = asJson(data);
    if (running) onProgress?.({ type: "progress", toolCallId: call.toolCallId, name: call.name, data: json });
  };
  try {
    const result: unknown = await tool.execute(args.data, { ...ids, progress });
    return toolOutputOf(call.name, result);
  } catch (err) {
    if (context.signal.aborted) throw context.signal.reason;
    if (err instanceof UnrecoverableError) throw err;
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
