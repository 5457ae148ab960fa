// The tool loop, once: a deterministic driver over injected effects. The in-process run gives it
// direct calls (with spans and memory callbacks); the Temporal workflow gives it activities. What
// the loop decides — turns up to maxSteps, tool calls in parallel, results in call order, one
// handoff per turn, a swarm's handoff and pipeline modes — exists only here.
// Temporal's workflow sandbox imports this module: no I/O, no Node built-ins, no side effects.
import {
  type AgentSpec,
  DEFAULTS,
  type Message,
  type RunnableSpec,
  type SwarmSpec,
  type TokenUsage,
  ValidationError,
  WaitForSignal,
  type WaitOptions,
} from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import {
  assistantMessage,
  HANDOFF_TOOL,
  handoffResult,
  handoffTarget,
  type SignalOutcome,
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
   * they come, before the turn's results. A call that must wait for a signal throws WaitForSignal:
   * the run stops (see Suspension) and this call runs again when it resumes, given `signals`: how
   * the waits it made so far ended, by signal name.
   */
  toolCall(call: ToolCall, turn: TurnContext, emit: (event: AgentEvent) => void, signals?: Readonly<Record<string, SignalOutcome>>): Promise<ToolOutput>;
}

/** Control passes to another agent: a handoff, or a pipeline's next agent. */
export interface Handoff {
  from: string;
  to: string;
  reason?: string | undefined;
  /** A pipeline's next input, joining the conversation after this. */
  message?: Message;
}

/** A message sent to the running task (`handle.send`), taken at a turn boundary. */
export interface InboxMessage {
  id: string;
  content: string;
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
  /**
   * Messages sent to the running task since the last boundary, taken at a turn boundary: before
   * each model turn, and once more after an answer with no tool calls (one sent during the final turn
   * gets an answer: another turn, if the agent has turns left). Each joins the conversation as a
   * user message, after a `user-message` event. @default none: nothing can be sent to the run
   */
  inbox?(turn: TurnContext): Effect<InboxMessage[]>;
  /** A message taken from the inbox has joined the conversation. */
  joined?(message: Message): Effect<void>;
}

export interface LoopOptions {
  /** Model turns at most per agent. @default agent.options.maxSteps ?? DEFAULTS.maxSteps */
  maxSteps?: number | undefined;
  /** Carry on a run that stopped to wait for a signal, from where it stopped (its `messages` replace the loop's). */
  resume?: SuspendedRun | undefined;
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

/** A tool call (or, with `beforeTurn`, a model turn: no call, `toolCallId` and `tool` empty) that waits for a signal. */
export interface PendingWait {
  toolCallId: string;
  tool: string;
  signal: string;
  kind: WaitForSignal["kind"];
  options: WaitOptions;
}

/**
 * Where a run stopped to wait for a signal (plain JSON): everything needed to carry on from there on
 * any worker, without running the model's earlier turns again. The turn whose tool calls were
 * running resumes: its finished calls keep their results, the waiting ones run again with the
 * signals they had. A run that stopped before a model turn (`beforeTurn`: its rate limit released
 * the slot) resumes with that turn.
 */
export interface SuspendedRun {
  /** The conversation so far, ending with the assistant message whose tool calls were running (or before the turn that waits). */
  messages: Message[];
  /** It stopped before a model turn, not among a turn's tool calls. */
  beforeTurn?: boolean;
  /** The agent whose turn it was. */
  agent: string;
  /** A swarm's handoffs so far, or a pipeline's position (0 for one agent). */
  at: number;
  /** Turns that agent took, counting the one that stopped (not counting it, before a turn). */
  agentSteps: number;
  steps: number;
  usage: TokenUsage;
  /** The turn's calls that finished, by call id. */
  results: Record<string, ToolOutput>;
  /** How the waits of its waiting calls ended so far: by call id, then signal name. */
  signals: Record<string, Record<string, SignalOutcome>>;
  /** Its waiting calls, in call order: the first is the signal the task waits for. */
  waits: PendingWait[];
}

/** Thrown by runLoop when a tool call must wait for a signal: the run stopped at `run`. */
export class Suspension extends Error {
  readonly run: SuspendedRun;
  constructor(run: SuspendedRun) {
    super(`waiting for signal "${run.waits[0]?.signal}"`);
    this.name = "Suspension";
    this.run = run;
  }
}

interface State {
  effects: LoopEffects;
  options: LoopOptions;
  messages: Message[];
  steps: number;
  usage: TokenUsage;
  /** The position runSwarm gives the agent now running (see SuspendedRun.at). */
  at: number;
  /** Set until the resumed turn has been taken up. */
  resume: SuspendedRun | undefined;
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
  const { resume } = options;
  const state: State = resume
    ? { effects, options, messages: [...resume.messages], steps: resume.steps, usage: resume.usage, at: resume.at, resume }
    : { effects, options, messages: [...messages], steps: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 }, at: 0, resume };
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
  let resumed = state.resume;
  state.resume = undefined;
  let i = 0;
  if (resumed) {
    i = resumed.beforeTurn ? resumed.agentSteps : resumed.agentSteps - 1;
    // Stopped before a turn: nothing of a turn to take up, it starts with that turn.
    if (resumed.beforeTurn) resumed = undefined;
  }
  for (; i < maxSteps; i++) {
    let turnContext: TurnContext;
    let toolCalls: readonly ToolCall[];
    let finished: Readonly<Record<string, ToolOutput>> = {};
    let signals: Readonly<Record<string, Record<string, SignalOutcome>>> = {};
    if (resumed) {
      // The turn that stopped: its answer is the conversation's last message, its model not asked again.
      const last = state.messages.at(-1);
      toolCalls = last?.role === "assistant" ? (last.toolCalls ?? []) : [];
      text = last?.role === "assistant" ? last.content : "";
      turnContext = { agent, step: state.steps - 1, handoffTargets };
      finished = resumed.results;
      signals = resumed.signals;
      resumed = undefined;
    } else {
      turnContext = { agent, step: state.steps, handoffTargets };
      yield* takeInbox(state, turnContext);
      let turn: TurnOutput;
      try {
        turn = yield* perform(own.modelTurn(state.messages, turnContext));
      } catch (err) {
        if (!(err instanceof WaitForSignal)) throw err;
        const wait: PendingWait = { toolCallId: "", tool: "", signal: err.signal, kind: err.kind, options: err.options };
        throw new Suspension({ ...position(state, agent, i), beforeTurn: true, results: {}, signals: {}, waits: [wait] });
      }
      state.steps++;
      state.usage = addUsage(state.usage, turn.usage);
      text = turn.text;
      const answer = assistantMessage(turn, agent.name, handoffTargets.length > 0);
      state.messages.push(answer);
      if (effects.answered) yield* perform(effects.answered(answer, turnContext));
      toolCalls = turn.toolCalls;
    }
    if (toolCalls.length === 0) {
      // A message sent during the final turn is answered, in one more turn if the agent has one left.
      if (i + 1 < maxSteps && (yield* takeInbox(state, { agent, step: state.steps, handoffTargets })) > 0) continue;
      break;
    }
    const handoff = toolCalls.find((c) => c.name === HANDOFF_TOOL);
    const waits: PendingWait[] = [];
    // Every call starts before any is awaited: in the workflow, their activities are scheduled in call order.
    const outputs = yield* streamWhile((emit) =>
      Promise.all(
        toolCalls.map(async (call): Promise<ToolResult | undefined> => {
          if (Object.hasOwn(finished, call.toolCallId)) return { call, ...finished[call.toolCallId]! };
          if (call.name === HANDOFF_TOOL) return { call, ...handoffResult(call, handoffTargets, call === handoff) };
          // Only the agent's own tools run, whatever else the worker registers (and in Temporal mode,
          // whatever the activity worker could run): a model asking for another is told so.
          if (state.options.ownToolsOnly !== false && !agent.tools.includes(call.name)) return { call, ...unknownToolResult(call.name) };
          try {
            const { result, isError } = await own.toolCall(call, turnContext, emit, signals[call.toolCallId]);
            return { call, result, isError };
          } catch (err) {
            if (!(err instanceof WaitForSignal)) throw err;
            waits.push({ toolCallId: call.toolCallId, tool: call.name, signal: err.signal, kind: err.kind, options: err.options });
            return undefined;
          }
        }),
      ),
    );
    if (waits.length > 0) throw suspension(state, agent, i, toolCalls, outputs, signals, waits);
    const results = outputs as ToolResult[];
    yield* perform(effects.toolResults(results, turnContext));
    state.messages.push(...results.map(toolMessage));
    if (handoff && results.some((r) => r.call === handoff && !r.isError)) return { text, handoff: handoffTarget(handoff) };
  }
  return { text };
}

/** Takes what waits in the run's inbox into the conversation, each after its `user-message` event; returns how many. */
async function* takeInbox(state: State, turn: TurnContext): AsyncGenerator<AgentEvent, number, undefined> {
  if (!state.effects.inbox) return 0;
  const messages = yield* perform(state.effects.inbox(turn));
  for (const m of messages) {
    yield { type: "user-message", messageId: m.id, content: m.content };
    const message: Message = { role: "user", content: m.content };
    state.messages.push(message);
    if (state.effects.joined) yield* perform(state.effects.joined(message));
  }
  return messages.length;
}

/** The run stops at turn `i` of `agent`: its finished calls' results and its waiting calls' signals are kept. */
function suspension(
  state: State,
  agent: AgentSpec,
  i: number,
  calls: readonly ToolCall[],
  outputs: readonly (ToolResult | undefined)[],
  signals: Readonly<Record<string, Record<string, SignalOutcome>>>,
  waits: PendingWait[],
): Suspension {
  const results: Record<string, ToolOutput> = {};
  for (const r of outputs) if (r) results[r.call.toolCallId] = { result: r.result, isError: r.isError };
  const order = new Map(calls.map((c, n) => [c.toolCallId, n]));
  waits.sort((a, b) => order.get(a.toolCallId)! - order.get(b.toolCallId)!);
  const kept: Record<string, Record<string, SignalOutcome>> = {};
  for (const w of waits) if (signals[w.toolCallId]) kept[w.toolCallId] = signals[w.toolCallId]!;
  return new Suspension({ ...position(state, agent, i + 1), results, signals: kept, waits });
}

/** Where the run is: its conversation, the agent and its place, `agentSteps` turns of it taken. */
function position(state: State, agent: AgentSpec, agentSteps: number) {
  return { messages: state.messages, agent: agent.name, at: state.at, agentSteps, steps: state.steps, usage: state.usage };
}

async function* runSwarm(swarm: SwarmSpec, state: State): AsyncGenerator<AgentEvent, { text: string; agent: AgentSpec }, undefined> {
  const resume = state.resume;
  if (swarm.mode === "pipeline") {
    let text = "";
    let last = swarm.agents[0]!;
    for (const [i, agent] of swarm.agents.entries()) {
      if (resume && i < resume.at) continue;
      if (i > 0 && !(resume && i === resume.at)) {
        // The next agent is given the previous one's answer as its input.
        const message: Message = { role: "user", content: text };
        yield* perform(state.effects.handoff({ from: last.name, to: agent.name, reason: "pipeline", message }, state.steps));
        state.messages.push(message);
      }
      state.at = i;
      text = (yield* runAgent(agent, state, [])).text;
      last = agent;
    }
    return { text, agent: last };
  }
  const byName = new Map(swarm.agents.map((a) => [a.name, a]));
  const entry = resume?.agent ?? swarm.entry ?? swarm.agents[0]?.name ?? "";
  let current = byName.get(entry);
  if (!current) throw ValidationError.of("swarm", "entry", `no agent "${entry}" in swarm "${swarm.name}"`);
  for (let handoffs = resume?.at ?? 0; ; handoffs++) {
    const agent: AgentSpec = current;
    const others = handoffs < swarm.maxHandoffs ? swarm.agents.filter((a) => a !== agent).map((a) => a.name) : [];
    state.at = handoffs;
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
