import type { JsonValue } from "@flotilla/core";
import type { Usage } from "@flotilla/events";

export interface ToolCallPart {
  toolCallId: string;
  name: string;
  args: JsonValue;
}

export type Message =
  | { role: "user"; content: string }
  | { role: "assistant"; content: string; toolCalls?: ToolCallPart[] }
  | { role: "tool"; toolCallId: string; name: string; content: JsonValue; isError: boolean };

export interface ToolDescriptor {
  name: string;
  description: string;
}

export interface ModelRequest {
  /** The model as the provider names it (the part after `provider:`). */
  model: string;
  instructions: string;
  messages: readonly Message[];
  tools: readonly ToolDescriptor[];
  options: Readonly<Record<string, JsonValue>>;
  signal: AbortSignal;
}

/** What a provider streams for one model turn. */
export type ModelChunk =
  | { type: "text"; delta: string }
  | ({ type: "tool_call" } & ToolCallPart)
  | { type: "usage"; usage: Usage }
  | { type: "finish"; reason: string };

/** A model backend; registered on the worker under the provider name used in `provider:model`. */
export interface ModelProvider {
  readonly name: string;
  stream(request: ModelRequest): AsyncIterable<ModelChunk>;
}

export type ProviderRegistry = ReadonlyMap<string, ModelProvider> | Readonly<Record<string, ModelProvider>>;

export function lookupProvider(registry: ProviderRegistry | undefined, name: string): ModelProvider | undefined {
  if (!registry) return undefined;
  if (registry instanceof Map) return registry.get(name);
  return Object.hasOwn(registry, name) ? (registry as Record<string, ModelProvider>)[name] : undefined;
}
