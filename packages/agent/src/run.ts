import type { JsonValue, Message, RateLimiter, Resumption, RunnableSpec } from "@flotilla/core";
import type { AgentEvent, Usage } from "@flotilla/events";
import { localEffects } from "./local-effects.ts";
import { type InboxMessage, type LoopResult, runLoop, Suspension } from "./loop.ts";
import { type LanguageModel, ModelResolver, type ModelResolverOptions } from "./model.ts";
import { parseOutput } from "./output.ts";
import { inputMessage } from "./steps.ts";
import { resumePoint, suspended } from "./suspend.ts";
import type { ToolRegistry } from "./tool.ts";

export interface RunOptions {
  signal?: AbortSignal;
  /** Resolves `provider:model` names (a resolver, or its options). @default new ModelResolver() */
  models?: ModelResolver | ModelResolverOptions;
  /** Use this model for every agent, whatever its `model` says (tests, proxies). */
  model?: LanguageModel;
  /** Tools the agents may call, by name. */
  tools?: ToolRegistry;
  /** Model turns at most per agent. @default agent.options.maxSteps ?? DEFAULTS.maxSteps (8) */
  maxSteps?: number;
  /** Passed to tools. @default "" */
  taskId?: string;
  /** Passed to tools. @default 1 */
  attempt?: number;
  /** Earlier turns of the conversation, before this input (conversation memory). */
  history?: readonly Message[];
  /** Awaited with each message as it joins the conversation: the input, then every assistant message and tool result. */
  onMessage?: (message: Message) => void | Promise<void>;
  /** Fleet-wide rate limits that agents (`rateLimit`) and tools draw from. @default none: an agent or tool that names one fails UNKNOWN_RATE_LIMIT */
  rateLimiter?: RateLimiter;
  /**
   * Carry on a run that stopped to wait for a signal (it threw TaskSuspended): the state it saved and
   * the signal that came (none: the wait timed out). `input` and `history` are then not used: the
   * saved conversation holds them.
   */
  resume?: Resumption;
  /**
   * Messages sent to the run (a worker gives its task's inbox: `handle.send`), asked for at each turn
   * boundary; each joins the conversation as a user message, after a `user-message` event. @default none
   */
  inbox?: () => Promise<InboxMessage[]>;
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

const specOf = (runnable: RunnableSpec | { toJSON(): RunnableSpec }): RunnableSpec =>
  "toJSON" in runnable && typeof runnable.toJSON === "function" ? runnable.toJSON() : (runnable as RunnableSpec);

/**
 * Runs an agent or a swarm: model turn, then the tools it asked for (in parallel), then the model
 * again, up to `maxSteps` turns per agent. A tool call that waits for a signal (its tool needs
 * approval, or calls `waitForSignal`) stops the run with a TaskSuspended error carrying its state;
 * `options.resume` carries it on. Yields events as they happen; returns the final answer
 * and usage. Tool errors go back to the model as error results, but an UnrecoverableError fails the
 * run (and aborts the turn's other tool calls); an unknown model or tool fails the run; an answer
 * that misses the agent's output schema is an OUTPUT_INVALID error. A tool's progress events are
 * yielded as they come, between its call's `tool_call` and `tool_result`.
 */
async function* stream(
  runnable: RunnableSpec | { toJSON(): RunnableSpec },
  input: JsonValue,
  options: RunOptions = {},
): AsyncGenerator<AgentEvent, RunResult, undefined> {
  const spec = specOf(runnable);
  // Ends the tool calls still running when the run fails (one threw an UnrecoverableError).
  const failed = new AbortController();
  const effects = localEffects({
    signal: options.signal ? AbortSignal.any([options.signal, failed.signal]) : failed.signal,
    resolver: options.models instanceof ModelResolver ? options.models : new ModelResolver(options.models),
    model: options.model,
    tools: options.tools,
    taskId: options.taskId ?? "",
    attempt: options.attempt ?? 1,
    onMessage: options.onMessage,
    rateLimiter: options.rateLimiter,
    inbox: options.inbox,
  });
  const resume = options.resume && resumePoint(options.resume);
  let messages: Message[] = [];
  if (!resume) {
    const user = inputMessage(input);
    await options.onMessage?.(user);
    messages = [...(options.history ?? []), user];
  }
  let loop: LoopResult;
  try {
    loop = yield* runLoop(spec, messages, effects, { maxSteps: options.maxSteps, resume });
  } catch (err) {
    if (err instanceof Suspension) throw suspended(err.run);
    failed.abort(err);
    throw err;
  }
  const { text, agent, steps, usage } = loop;
  yield { type: "usage", ...usage };
  const output = agent.outputSchema ? parseOutput(text, agent.outputSchema) : undefined;
  return { text, ...(output !== undefined && { output }), steps, usage, agent: agent.name };
}

export const run = { stream };
