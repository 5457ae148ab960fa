// The tool loop, once: a deterministic driver over injected effects. The in-process run gives it
// direct calls (with spans and memory callbacks); the Temporal workflow gives it activities. What
// the loop decides — turns up to maxSteps, tool calls in parallel, results in call order, one
// handoff per turn, a swarm's handoff and pipeline modes — exists only here.
// Temporal's workflow sandbox imports this module: no I/O, no Node built-ins, no side effects.
import { type AgentSpec, DEFAULTS, type Message, type RunnableSpec, type SwarmSpec, type TokenUsage, ValidationError } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import {
  assistantMessage,
  HANDOFF_TOOL,
  handoffResult,
  handoffTarget,
  type ToolCall,
  type ToolOutput,
  type ToolResult,
  toolMessage,
  unknownToolResult,
} from "./steps.ts";
import { streamWhile } from "./stream-while.ts";

/** An effect's outcome: awaited, or streamed (its events are the run's, yielded as they come). */
export type Effect<T> = Promise<T> | AsyncGenerator<AgentEvent, T, undefined>;

/** What one model turn produced. */
export interface TurnOutput {
  text: string;
  toolCalls: ToolCall[];
  usage: TokenUsage;
  finishReason: string;
}

/** Where in the run a turn is. */
export interface TurnContext {
  agent: AgentSpec;
  /** The turn's index in the run (0, 1, …), counted across a swarm's agents. */
  step: number;
  /** The agents it may hand over to (a swarm member with handoffs left); empty otherwise. */
  handoffTargets: readonly string[];
}

/** What one agent's turns run on, from the moment it takes over. */
export interface AgentEffects {
  /** One model turn over the conversation so far. */
  modelTurn(messages: readonly Message[], turn: TurnContext): Effect<TurnOutput>;
  /**
   * One call of a tool (never the handoff tool, which the loop answers itself). Calls of a turn run
   * at once; the events a call hands `emit` while it runs (its progress) join the run's stream as
   * they come, before the turn's results.
   */
  toolCall(call: ToolCall, turn: TurnContext, emit: (event: AgentEvent) => void): Promise<ToolOutput>;
}

/** Control passes to another agent: a handoff, or a pipeline's next agent. */
export interface Handoff {
  from: string;
  to: string;
  reason?: string | undefined;
  /** A pipeline's next input, joining the conversation after this. */
  message?: Message;
}

export interface LoopEffects {
  /** An agent takes over (the first, or after a handoff): resolve what its turns need. */
  enter(agent: AgentSpec, handoffTargets: readonly string[]): AgentEffects | Promise<AgentEffects>;
  /** A turn's assistant message has joined the conversation. */
  answered?(message: Message, turn: TurnContext): Effect<void>;
  /** A turn's tool results, in call order, joining the conversation after this. */
  toolResults(results: ToolResult[], turn: TurnContext): Effect<void>;
  /** `step`: the turns run so far. */
  handoff(handoff: Handoff, step: number): Effect<void>;
}

export interface LoopOptions {
  /** Model turns at most per agent. @default agent.options.maxSteps ?? DEFAULTS.maxSteps */
  maxSteps?: number | undefined;
  /**
   * Answer a call of a tool the agent does not list as an error, without running it. Only the
   * Temporal workflow turns this off, when it replays a history recorded before the rule existed.
   * @default true
   */
  ownToolsOnly?: boolean | undefined;
}

export interface LoopResult {
  /** The final agent's last answer. */
  text: string;
  /** The agent that gave it (a swarm's last). */
  agent: AgentSpec;
  steps: number;
  usage: TokenUsage;
}

interface State {
  effects: LoopEffects;
  options: LoopOptions;
  messages: Message[];
  steps: number;
  usage: TokenUsage;
}

interface Outcome {
  text: string;
  handoff?: { to: string; reason?: string };
}

/** Model turns at most for `agent`: the run's override, else its `maxSteps` option, else the default. */
export function maxStepsOf(agent: AgentSpec, override?: number): number {
  return override ?? (typeof agent.options.maxSteps === "number" ? agent.options.maxSteps : DEFAULTS.maxSteps);
}

/**
 * Runs an agent or a swarm over a conversation (`messages`: earlier turns and the input), yielding
 * the events its effects stream; returns the final answer, its agent, steps and usage.
 */
export async function* runLoop(
  spec: RunnableSpec,
  messages: readonly Message[],
  effects: LoopEffects,
  options: LoopOptions = {},
): AsyncGenerator<AgentEvent, LoopResult, undefined> {
  const state: State = { effects, options, messages: [...messages], steps: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
  const { text, agent } = spec.kind === "swarm" ? yield* runSwarm(spec, state) : { text: (yield* runAgent(spec, state, [])).text, agent: spec };
  return { text, agent, steps: state.steps, usage: state.usage };
}

/** Runs a loop whose effects stream nothing (the workflow's activities publish their own events). */
export async function settle<T>(loop: AsyncGenerator<AgentEvent, T, undefined>): Promise<T> {
  for (;;) {
    const next = await loop.next();
    if (next.done) return next.value;
  }
}

async function* perform<T>(effect: Effect<T>): AsyncGenerator<AgentEvent, T, undefined> {
  return Symbol.asyncIterator in effect ? yield* effect : await effect;
}

async function* runAgent(agent: AgentSpec, state: State, handoffTargets: readonly string[]): AsyncGenerator<AgentEvent, Outcome, undefined> {
  const { effects } = state;
  const own = await effects.enter(agent, handoffTargets);
  const maxSteps = maxStepsOf(agent, state.options.maxSteps);
  let text = "";
  for (let i = 0; i < maxSteps; i++) {
    const turnContext: TurnContext = { agent, step: state.steps, handoffTargets };
    const turn = yield* perform(own.modelTurn(state.messages, turnContext));
    state.steps++;
    state.usage = addUsage(state.usage, turn.usage);
    text = turn.text;
    const answer = assistantMessage(turn, agent.name, handoffTargets.length > 0);
    state.messages.push(answer);
    if (effects.answered) yield* perform(effects.answered(answer, turnContext));
    if (turn.toolCalls.length === 0) break;
    const handoff = turn.toolCalls.find((c) => c.name === HANDOFF_TOOL);
    // Every call starts before any is awaited: in the workflow, their activities are scheduled in call order.
    const results = yield* streamWhile((emit) =>
      Promise.all(
        turn.toolCalls.map(async (call): Promise<ToolResult> => {
          if (call.name === HANDOFF_TOOL) return { call, ...handoffResult(call, handoffTargets, call === handoff) };
          // Only the agent's own tools run, whatever else the worker registers (and in Temporal mode,
          // whatever the activity worker could run): a model asking for another is told so.
          if (state.options.ownToolsOnly !== false && !agent.tools.includes(call.name)) return { call, ...unknownToolResult(call.name) };
          const { result, isError } = await own.toolCall(call, turnContext, emit);
          return { call, result, isError };
        }),
      ),
    );
    yield* perform(effects.toolResults(results, turnContext));
    state.messages.push(...results.map(toolMessage));
    if (handoff && results.some((r) => r.call === handoff && !r.isError)) return { text, handoff: handoffTarget(handoff) };
  }
  return { text };
}

async function* runSwarm(swarm: SwarmSpec, state: State): AsyncGenerator<AgentEvent, { text: string; agent: AgentSpec }, undefined> {
  if (swarm.mode === "pipeline") {
    let text = "";
    let last = swarm.agents[0]!;
    for (const [i, agent] of swarm.agents.entries()) {
      if (i > 0) {
        // The next agent is given the previous one's answer as its input.
        const message: Message = { role: "user", content: text };
        yield* perform(state.effects.handoff({ from: last.name, to: agent.name, reason: "pipeline", message }, state.steps));
        state.messages.push(message);
      }
      text = (yield* runAgent(agent, state, [])).text;
      last = agent;
    }
    return { text, agent: last };
  }
  const byName = new Map(swarm.agents.map((a) => [a.name, a]));
  const entry = swarm.entry ?? swarm.agents[0]?.name ?? "";
  let current = byName.get(entry);
  if (!current) throw ValidationError.of("swarm", "entry", `no agent "${entry}" in swarm "${swarm.name}"`);
  for (let handoffs = 0; ; handoffs++) {
    const agent: AgentSpec = current;
    const others = handoffs < swarm.maxHandoffs ? swarm.agents.filter((a) => a !== agent).map((a) => a.name) : [];
    const outcome = yield* runAgent(agent, state, others);
    if (!outcome.handoff) return { text: outcome.text, agent };
    yield* perform(state.effects.handoff({ from: agent.name, ...outcome.handoff }, state.steps));
    // handoffResult accepted it, so the target is one of the swarm's agents.
    current = byName.get(outcome.handoff.to)!;
  }
}

function addUsage(a: TokenUsage, b: TokenUsage): TokenUsage {
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, totalTokens: a.totalTokens + b.totalTokens };
}
