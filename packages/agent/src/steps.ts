// The decisions of the tool loop that are pure data: shared by the in-process run and by the
// Temporal workflow and its activities. The workflow's sandbox may import nothing with side
// effects: type imports only.
import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import type { JsonValue, Message } from "@flotilla/core";

/** The built-in tool a swarm's agents hand control over with. */
export const HANDOFF_TOOL = "transfer_to_agent";

/** A tool call as a model turn asked for it. */
export interface ToolCall {
  toolCallId: string;
  name: string;
  args: JsonValue;
}

/** What a tool call gave back; an error goes back to the model as a result too. */
export interface ToolOutput {
  result: JsonValue;
  isError: boolean;
}

/** How a wait of a tool call ended, once its task resumed: the signal's payload, or that it timed out. */
export type SignalOutcome = { payload: JsonValue } | { timedOut: true };

/** A tool call with its output, as a turn's results are reported (in call order). */
export interface ToolResult extends ToolOutput {
  call: ToolCall;
}

/** The user message a run's input becomes. */
export function inputMessage(input: JsonValue): Message {
  return { role: "user", content: typeof input === "string" ? input : JSON.stringify(input) };
}

/** The assistant message a model turn adds to the conversation (`inSwarm`: it names its agent). */
export function assistantMessage(turn: { text: string; toolCalls: readonly ToolCall[] }, agent: string, inSwarm: boolean): Message {
  return {
    role: "assistant",
    content: turn.text,
    ...(turn.toolCalls.length > 0 && { toolCalls: [...turn.toolCalls] }),
    ...(inSwarm && { agent }),
  };
}

/** The message a tool result adds to the conversation. */
export function toolMessage({ call, result, isError }: ToolResult): Message {
  return { role: "tool", toolCallId: call.toolCallId, name: call.name, content: result, isError };
}

/** The handoff tool's answer to a call: accepted only for a known agent, and only the turn's first handoff. */
export function handoffResult(call: ToolCall, targets: readonly string[], first: boolean): ToolOutput {
  const to = (call.args as { agent?: unknown } | null)?.agent;
  if (typeof to !== "string" || !targets.includes(to)) return { result: `no agent "${String(to)}"; choose one of ${targets.join(", ")}`, isError: true };
  if (!first) return { result: "only one handoff per turn", isError: true };
  return { result: `transferred to ${to}`, isError: false };
}

/** The agent and reason an accepted handoff call names. */
export function handoffTarget(call: ToolCall): { to: string; reason?: string } {
  const args = call.args as { agent: string; reason?: string };
  return { to: args.agent, ...(args.reason !== undefined && { reason: args.reason }) };
}

/** The built-in handoff tool as the model is told about it, listing the agents it may hand over to. */
export function handoffDefinition(targets: readonly string[]): LanguageModelV4FunctionTool {
  return {
    type: "function",
    name: HANDOFF_TOOL,
    description: `Hand the conversation over to another agent, who carries on from here: ${targets.join(", ")}.`,
    inputSchema: {
      type: "object",
      properties: { agent: { type: "string", enum: [...targets] }, reason: { type: "string" } },
      required: ["agent"],
      additionalProperties: false,
    },
  };
}

/** The answer to a call of a tool the agent does not have: the model is told, nothing runs. */
export function unknownToolResult(name: string): { result: JsonValue; isError: boolean } {
  return { result: `unknown tool "${name}"`, isError: true };
}
