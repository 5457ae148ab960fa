import { type AgentSpec, ErrorCodes, FlotillaError, type JsonValue, toTaskError } from "@flotilla/core";
import type { AgentEvent, Usage } from "@flotilla/events";
import type { Agent } from "./agent.ts";
import { lookupProvider, type Message, type ModelProvider, type ProviderRegistry, type ToolCallPart } from "./provider.ts";
import { scriptedProvider } from "./scripted.ts";
import { lookupTool, type ToolRegistry } from "./tool.ts";

export interface RunOptions {
  signal?: AbortSignal;
  /** Use this provider whatever the model's provider prefix says. */
  provider?: ModelProvider;
  /** Providers by name; `scripted` is always available. */
  providers?: ProviderRegistry;
  /** Tools the agent may call, by name. */
  tools?: ToolRegistry;
  /** Model turns at most. @default agent.options.maxSteps ?? 8 */
  maxSteps?: number;
  taskId?: string;
  attempt?: number;
}

export interface RunResult {
  text: string;
  steps: number;
  usage: Usage;
}

const builtIn = scriptedProvider();

function resolveProvider(spec: AgentSpec, options: RunOptions): ModelProvider {
  if (options.provider) return options.provider;
  const name = spec.model.slice(0, spec.model.indexOf(":"));
  const provider = lookupProvider(options.providers, name) ?? (name === "scripted" ? builtIn : undefined);
  if (!provider) {
    throw new FlotillaError(ErrorCodes.UNKNOWN_PROVIDER, `no provider "${name}" is registered on this worker (model "${spec.model}")`);
  }
  return provider;
}

const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

/**
 * Runs an agent: model turn, then the tools it asked for (in parallel), then the model again,
 * up to `maxSteps` turns. Yields events as they happen; returns the final text and usage.
 * Tool errors go back to the model as error results; an unknown provider or tool fails the run.
 */
async function* stream(agent: Agent | AgentSpec, input: JsonValue, options: RunOptions = {}): AsyncGenerator<AgentEvent, RunResult, undefined> {
  const spec: AgentSpec = "toJSON" in agent && typeof agent.toJSON === "function" ? agent.toJSON() : (agent as AgentSpec);
  const signal = options.signal ?? new AbortController().signal;
  const provider = resolveProvider(spec, options);
  const tools = spec.tools.map((name) => {
    const tool = lookupTool(options.tools, name);
    if (!tool) throw new FlotillaError(ErrorCodes.UNKNOWN_TOOL, `agent "${spec.name}" uses tool "${name}", which this worker does not register`);
    return tool;
  });
  const maxStepsOption = spec.options.maxSteps;
  const maxSteps = options.maxSteps ?? (typeof maxStepsOption === "number" ? maxStepsOption : 8);
  const messages: Message[] = [{ role: "user", content: typeof input === "string" ? input : JSON.stringify(input) }];
  let usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  let text = "";
  let steps = 0;

  for (let step = 0; step < maxSteps; step++) {
    if (signal.aborted) throw signal.reason;
    const calls: ToolCallPart[] = [];
    let turnText = "";
    let turnUsage: Usage | undefined;
    let finishReason = "stop";
    for await (const chunk of provider.stream({
      model: spec.model.slice(spec.model.indexOf(":") + 1),
      instructions: spec.instructions,
      messages,
      tools: tools.map((t) => ({ name: t.name, description: t.description })),
      options: spec.options,
      signal,
    })) {
      if (signal.aborted) throw signal.reason;
      switch (chunk.type) {
        case "text":
          turnText += chunk.delta;
          yield { type: "text", delta: chunk.delta };
          break;
        case "tool_call":
          calls.push({ toolCallId: chunk.toolCallId, name: chunk.name, args: chunk.args });
          yield { type: "tool_call", toolCallId: chunk.toolCallId, name: chunk.name, args: chunk.args };
          break;
        case "usage":
          turnUsage = chunk.usage;
          break;
        case "finish":
          finishReason = chunk.reason;
          break;
      }
    }
    steps++;
    if (turnUsage) usage = addUsage(usage, turnUsage);
    yield turnUsage ? { type: "step", index: step, finishReason, usage: turnUsage } : { type: "step", index: step, finishReason };
    messages.push({ role: "assistant", content: turnText, toolCalls: calls });
    text = turnText;
    if (calls.length === 0) break;

    const results = await Promise.all(
      calls.map(async (call) => {
        const tool = tools.find((t) => t.name === call.name);
        if (!tool) return { call, isError: true, result: `unknown tool "${call.name}"` as JsonValue };
        const args = tool.inputSchema.safeParse(call.args);
        if (!args.success) return { call, isError: true, result: `invalid arguments: ${args.error.issues[0]?.message}` as JsonValue };
        try {
          const result = await tool.execute(args.data, { signal, taskId: options.taskId ?? "", attempt: options.attempt ?? 1 });
          return { call, isError: false, result: (result ?? null) as JsonValue };
        } catch (err) {
          if (signal.aborted) throw signal.reason;
          return { call, isError: true, result: toTaskError(err, ErrorCodes.TOOL_ERROR).message as JsonValue };
        }
      }),
    );
    for (const { call, isError, result } of results) {
      yield { type: "tool_result", toolCallId: call.toolCallId, name: call.name, result, isError };
      messages.push({ role: "tool", toolCallId: call.toolCallId, name: call.name, content: result, isError });
    }
  }
  yield { type: "usage", ...usage };
  return { text, steps, usage };
}

export const run = { stream };
