import type { LanguageModelV4FunctionTool } from "@ai-sdk/provider";
import {
  type AgentSpec,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  type Message,
  type RunnableSpec,
  type SwarmSpec,
  toTaskError,
} from "@flotilla/core";
import type { AgentEvent, Usage } from "@flotilla/events";
import { context, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import { inputText } from "./messages.ts";
import { type LanguageModel, ModelResolver, type ModelResolverOptions } from "./model.ts";
import { parseOutput } from "./output.ts";
import { assistantMessage, HANDOFF_TOOL, handoffDefinition, handoffResult, handoffTarget } from "./steps.ts";
import { lookupTool, type Tool, type ToolRegistry, toolDefinition } from "./tool.ts";
import { modelTurn, type ToolCall, type TurnResult } from "./turn.ts";

export interface RunOptions {
  signal?: AbortSignal;
  /** Resolves `provider:model` names (a resolver, or its options). @default new ModelResolver() */
  models?: ModelResolver | ModelResolverOptions;
  /** Use this model for every agent, whatever its `model` says (tests, proxies). */
  model?: LanguageModel;
  /** Tools the agents may call, by name. */
  tools?: ToolRegistry;
  /** Model turns at most per agent. @default agent.options.maxSteps ?? 8 */
  maxSteps?: number;
  taskId?: string;
  attempt?: number;
  /** Earlier turns of the conversation, before this input (conversation memory). */
  history?: readonly Message[];
  /** Awaited with each message as it joins the conversation: the input, then every assistant message and tool result. */
  onMessage?: (message: Message) => void | Promise<void>;
}

export interface RunResult {
  /** The final agent's last answer. */
  text: string;
  /** The answer parsed and checked against the agent's `outputSchema`, when it has one. */
  output?: JsonValue;
  steps: number;
  usage: Usage;
  /** The agent that gave the answer (a swarm's last). */
  agent: string;
}

const tracer = () => trace.getTracer("@flotilla/agent");

/** Ends a span, marking it failed when `err` is given. */
function endSpan(span: Span, err?: unknown): void {
  if (err !== undefined) {
    span.recordException(err instanceof Error ? err : new Error(String(err)));
    span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  }
  span.end();
}


const addUsage = (a: Usage, b: Usage): Usage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

interface Conversation {
  messages: Message[];
  usage: Usage;
  steps: number;
}

interface Context {
  options: RunOptions;
  signal: AbortSignal;
  resolver: ModelResolver;
  conversation: Conversation;
}

const specOf = (runnable: RunnableSpec | { toJSON(): RunnableSpec }): RunnableSpec =>
  "toJSON" in runnable && typeof runnable.toJSON === "function" ? runnable.toJSON() : (runnable as RunnableSpec);

/**
 * Runs an agent or a swarm: model turn, then the tools it asked for (in parallel), then the model
 * again, up to `maxSteps` turns per agent. Yields events as they happen; returns the final answer
 * and usage. Tool errors go back to the model as error results; an unknown model or tool fails the
 * run; an answer that misses the agent's output schema is an OUTPUT_INVALID error.
 */
async function* stream(
  runnable: RunnableSpec | { toJSON(): RunnableSpec },
  input: JsonValue,
  options: RunOptions = {},
): AsyncGenerator<AgentEvent, RunResult, undefined> {
  const spec = specOf(runnable);
  const signal = options.signal ?? new AbortController().signal;
  const resolver = options.models instanceof ModelResolver ? options.models : new ModelResolver(options.models);
  const ctx: Context = { options, signal, resolver, conversation: { messages: [...(options.history ?? [])], usage: zero(), steps: 0 } };
  await add(ctx, { role: "user", content: inputText(input) });
  let result: { text: string; agent: AgentSpec };
  if (spec.kind === "swarm") result = yield* runSwarm(spec, ctx);
  else result = { text: (yield* runAgent(spec, ctx, [])).text, agent: spec };
  const { usage, steps } = ctx.conversation;
  yield { type: "usage", ...usage };
  const output = result.agent.outputSchema ? parseOutput(result.text, result.agent.outputSchema) : undefined;
  return { text: result.text, ...(output !== undefined && { output }), steps, usage, agent: result.agent.name };
}

const zero = (): Usage => ({ inputTokens: 0, outputTokens: 0, totalTokens: 0 });

async function add(ctx: Context, message: Message): Promise<void> {
  ctx.conversation.messages.push(message);
  await ctx.options.onMessage?.(message);
}

/** The tools an agent names, from the worker's registry; one the worker lacks is an UNKNOWN_TOOL error. */
export function resolveTools(agent: AgentSpec, registry: ToolRegistry | undefined): Tool[] {
  return agent.tools.map((name) => {
    const tool = lookupTool(registry, name);
    if (!tool) throw new FlotillaError(ErrorCodes.UNKNOWN_TOOL, `agent "${agent.name}" uses tool "${name}", which this worker does not register`);
    return tool;
  });
}

/** Runs one tool call with the run's signal; a failure becomes an error result for the model. */
export async function runToolCall(
  tool: Tool | undefined,
  call: ToolCall,
  context: { signal: AbortSignal; taskId: string; attempt: number },
): Promise<{ result: JsonValue; isError: boolean }> {
  if (!tool) return { result: `unknown tool "${call.name}"`, isError: true };
  const args = tool.inputSchema.safeParse(call.args);
  if (!args.success) return { result: `invalid arguments: ${args.error.issues[0]?.message}`, isError: true };
  try {
    const result = await tool.execute(args.data, context);
    return { result: (result ?? null) as JsonValue, isError: false };
  } catch (err) {
    if (context.signal.aborted) throw context.signal.reason;
    return { result: toTaskError(err, ErrorCodes.TOOL_ERROR).message, isError: true };
  }
}

interface AgentOutcome {
  text: string;
  handoff?: { to: string; reason?: string };
}

/** One agent's turns; `handoffTargets` non-empty gives it the handoff tool (a swarm member). */
async function* runAgent(agent: AgentSpec, ctx: Context, handoffTargets: readonly string[]): AsyncGenerator<AgentEvent, AgentOutcome, undefined> {
  const { options, signal } = ctx;
  const model = options.model ?? (await ctx.resolver.resolve(agent.model));
  const tools = resolveTools(agent, options.tools);
  const definitions: LanguageModelV4FunctionTool[] = tools.map(toolDefinition);
  if (handoffTargets.length > 0) definitions.push(handoffDefinition(handoffTargets));
  const maxStepsOption = agent.options.maxSteps;
  const maxSteps = options.maxSteps ?? (typeof maxStepsOption === "number" ? maxStepsOption : 8);
  let text = "";
  for (let step = 0; step < maxSteps; step++) {
    if (signal.aborted) throw signal.reason;
    // One span per model turn, a child of whatever span is active (the worker's flotilla.execute).
    const span = tracer().startSpan("flotilla.model_turn", {
      attributes: { "flotilla.agent": agent.name, "gen_ai.request.model": agent.model, "flotilla.step": ctx.conversation.steps },
    });
    let turn: TurnResult;
    try {
      turn = yield* modelTurn({ model, agent, messages: ctx.conversation.messages, tools: definitions, signal });
      span.setAttributes({ "gen_ai.usage.input_tokens": turn.usage.inputTokens, "gen_ai.usage.output_tokens": turn.usage.outputTokens });
      endSpan(span);
    } catch (err) {
      endSpan(span, err);
      throw err;
    }
    ctx.conversation.steps++;
    ctx.conversation.usage = addUsage(ctx.conversation.usage, turn.usage);
    yield { type: "step", index: ctx.conversation.steps - 1, finishReason: turn.finishReason, usage: turn.usage };
    text = turn.text;
    await add(ctx, assistantMessage(turn, agent.name, handoffTargets.length > 0));
    if (turn.toolCalls.length === 0) break;
    const handoff = turn.toolCalls.find((c) => c.name === HANDOFF_TOOL);
    const results = await Promise.all(
      turn.toolCalls.map(async (call) => {
        if (call.name === HANDOFF_TOOL) return { call, ...handoffResult(call, handoffTargets, handoff === call) };
        const tool = tools.find((t) => t.name === call.name);
        const span = tracer().startSpan("flotilla.tool", { attributes: { "flotilla.tool": call.name, "flotilla.tool_call_id": call.toolCallId } });
        try {
          const out = await context.with(trace.setSpan(context.active(), span), () =>
            runToolCall(tool, call, { signal, taskId: options.taskId ?? "", attempt: options.attempt ?? 1 }),
          );
          endSpan(span, out.isError ? new Error(String(out.result)) : undefined);
          return { call, ...out };
        } catch (err) {
          endSpan(span, err);
          throw err;
        }
      }),
    );
    for (const { call, result, isError } of results) {
      yield { type: "tool_result", toolCallId: call.toolCallId, name: call.name, result, isError };
      await add(ctx, { role: "tool", toolCallId: call.toolCallId, name: call.name, content: result, isError });
    }
    if (handoff && results.some((r) => r.call === handoff && !r.isError)) return { text, handoff: handoffTarget(handoff) };
  }
  return { text };
}

async function* runSwarm(swarm: SwarmSpec, ctx: Context): AsyncGenerator<AgentEvent, { text: string; agent: AgentSpec }, undefined> {
  const byName = new Map(swarm.agents.map((a) => [a.name, a]));
  if (swarm.mode === "pipeline") {
    let text = "";
    let last = swarm.agents[0]!;
    for (const [i, agent] of swarm.agents.entries()) {
      if (i > 0) {
        yield { type: "handoff", from: last.name, to: agent.name, reason: "pipeline" };
        // The next agent is given the previous one's answer as its input.
        await add(ctx, { role: "user", content: text });
      }
      text = (yield* runAgent(agent, ctx, [])).text;
      last = agent;
    }
    return { text, agent: last };
  }
  let current = byName.get(swarm.entry ?? swarm.agents[0]!.name)!;
  for (let handoffs = 0; ; handoffs++) {
    const others = handoffs < swarm.maxHandoffs ? swarm.agents.filter((a) => a !== current).map((a) => a.name) : [];
    const outcome = yield* runAgent(current, ctx, others);
    if (!outcome.handoff) return { text: outcome.text, agent: current };
    yield { type: "handoff", from: current.name, to: outcome.handoff.to, ...(outcome.handoff.reason && { reason: outcome.handoff.reason }) };
    current = byName.get(outcome.handoff.to)!;
  }
}

export const run = { stream };
