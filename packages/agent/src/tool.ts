import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import type { JsonValue } from "@flotilla/core";
import { z } from "zod";

export interface ToolContext {
  /** Aborted when the task is cancelled, times out or the worker shuts down. */
  signal: AbortSignal;
  taskId: string;
  attempt: number;
}

/** A tool the worker registers by name; tasks refer to it by that name only. */
export interface Tool<S extends z.ZodType = z.ZodType, R extends JsonValue = JsonValue> {
  name: string;
  description: string;
  inputSchema: S;
  execute(args: z.output<S>, context: ToolContext): Promise<R> | R;
}

export function defineTool<S extends z.ZodType, R extends JsonValue>(tool: Tool<S, R>): Tool<S, R> {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) throw new Error(`invalid tool name "${tool.name}"`);
  return tool;
}

/** Tools by name, as a worker registers them. */
export type ToolRegistry = ReadonlyMap<string, Tool> | Readonly<Record<string, Tool>>;

export function lookupTool(registry: ToolRegistry | undefined, name: string): Tool | undefined {
  if (!registry) return undefined;
  if (registry instanceof Map) return registry.get(name);
  return Object.hasOwn(registry, name) ? (registry as Record<string, Tool>)[name] : undefined;
}

/** A tool as the model is told about it: its name, description and input as JSON Schema. */
export function toolDefinition(tool: Tool): LanguageModelV4FunctionTool {
  const { $schema: _, ...schema } = z.toJSONSchema(tool.inputSchema, { io: "input", target: "draft-7" }) as Record<string, unknown>;
  return { type: "function", name: tool.name, description: tool.description, inputSchema: schema as LanguageModelV4FunctionTool["inputSchema"] };
}
