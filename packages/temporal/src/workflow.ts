// The workflow a Flotilla task becomes in Temporal mode. It holds the conversation and decides what
// runs next; every model turn and every tool call is an activity of its own, so a crash or a retry
// resumes after the last completed one instead of starting over. Deterministic: no I/O here; the
// loop's pure decisions come from @flotilla/agent/steps, shared with the in-process run.

import { assistantMessage, HANDOFF_TOOL, handoffResult, handoffTarget } from "@flotilla/agent/steps";
import type { AgentSpec, Message, SwarmSpec, TokenUsage } from "@flotilla/core";
import { ApplicationFailure, proxyActivities } from "@temporalio/workflow";
import type { createActivities } from "./activities.ts";
import type { ActivitySettings, AgentWorkflowInput, RunResultJson, ToolCallJson, ToolOutput } from "./types.ts";

type Activities = ReturnType<typeof createActivities>;

/** Errors that no retry can fix: they fail the task at once (the activities throw these as non-retryable too). */
export const NON_RETRYABLE_TYPES = ["VALIDATION_ERROR", "UNKNOWN_TOOL", "UNKNOWN_PROVIDER", "OUTPUT_INVALID", "UNKNOWN_MEMORY", "INVALID_PAYLOAD"];

function activities(settings: ActivitySettings = {}): Activities {
  return proxyActivities<Activities>({
    startToCloseTimeout: settings.startToCloseTimeoutMs ?? 600_000,
    // Activities heartbeat on a timer (every second), not per event: a slow model stays alive.
    heartbeatTimeout: settings.heartbeatTimeoutMs ?? 10_000,
    retry: {
      initialInterval: "1 second",
      backoffCoefficient: 2,
      maximumInterval: "30 seconds",
      maximumAttempts: settings.maximumAttempts ?? 5,
      nonRetryableErrorTypes: NON_RETRYABLE_TYPES,
    },
  });
}

const add = (a: TokenUsage, b: TokenUsage): TokenUsage => ({
  inputTokens: a.inputTokens + b.inputTokens,
  outputTokens: a.outputTokens + b.outputTokens,
  totalTokens: a.totalTokens + b.totalTokens,
});

interface State {
  input: AgentWorkflowInput;
  act: Activities;
  messages: Message[];
  step: number;
  usage: TokenUsage;
}

/** Runs a Flotilla agent or swarm durably; returns what Redis mode's agent executor returns. */
export async function flotillaAgent(input: AgentWorkflowInput): Promise<RunResultJson> {
  const act = activities(input.activity);
  const messages = await act.begin({ taskId: input.taskId, input: input.input, memory: input.memory });
  const state: State = { input, act, messages, step: 0, usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 } };
  const { agent, text } = input.agent.kind === "swarm" ? await runSwarm(input.agent, state) : { agent: input.agent, text: (await runAgent(input.agent, state, [])).text };
  return act.finish({ taskId: input.taskId, agent, text, steps: state.step, usage: state.usage });
}

async function runAgent(agent: AgentSpec, state: State, handoffTargets: string[]): Promise<{ text: string; handoff?: { to: string; reason?: string } }> {
  const maxSteps = typeof agent.options.maxSteps === "number" ? agent.options.maxSteps : 8;
  const { taskId, memory } = state.input;
  let text = "";
  for (let i = 0; i < maxSteps; i++) {
    const turn = await state.act.modelTurn({ taskId, step: state.step, agent, messages: state.messages, handoffTargets, memory });
    const step = state.step++;
    state.usage = add(state.usage, turn.usage);
    text = turn.text;
    state.messages.push(assistantMessage(turn, agent.name, handoffTargets.length > 0));
    if (turn.toolCalls.length === 0) break;
    const handoff = turn.toolCalls.find((c) => c.name === HANDOFF_TOOL);
    const results = await Promise.all(
      turn.toolCalls.map(async (call): Promise<{ call: ToolCallJson } & ToolOutput> => {
        if (call.name === HANDOFF_TOOL) return { call, ...handoffResult(call, handoffTargets, call === handoff) };
        return { call, ...(await state.act.toolCall({ taskId, step, call, memory })) };
      }),
    );
    // The results' events and memory go out together, in call order, as in Redis mode.
    await state.act.emit({ taskId, step, kind: "tool-results", agent: state.input.agent.name, results, memory });
    for (const { call, result, isError } of results) {
      state.messages.push({ role: "tool", toolCallId: call.toolCallId, name: call.name, content: result, isError });
    }
    if (handoff && results.some((r) => r.call === handoff && !r.isError)) return { text, handoff: handoffTarget(handoff) };
  }
  return { text };
}

async function runSwarm(swarm: SwarmSpec, state: State): Promise<{ agent: AgentSpec; text: string }> {
  const { taskId, memory } = state.input;
  const byName = new Map(swarm.agents.map((a) => [a.name, a]));
  if (swarm.mode === "pipeline") {
    let text = "";
    let last = swarm.agents[0]!;
    for (const [i, agent] of swarm.agents.entries()) {
      if (i > 0) {
        await state.act.emit({ taskId, step: state.step, kind: "handoff", from: last.name, to: agent.name, reason: "pipeline", message: { role: "user", content: text }, memory });
        state.messages.push({ role: "user", content: text });
      }
      text = (await runAgent(agent, state, [])).text;
      last = agent;
    }
    return { agent: last, text };
  }
  const entry = byName.get(swarm.entry ?? swarm.agents[0]!.name);
  if (!entry) throw ApplicationFailure.nonRetryable(`swarm "${swarm.name}" has no entry agent`, "VALIDATION_ERROR");
  let current = entry;
  for (let handoffs = 0; ; handoffs++) {
    const others = handoffs < swarm.maxHandoffs ? swarm.agents.filter((a) => a !== current).map((a) => a.name) : [];
    const outcome = await runAgent(current, state, others);
    if (!outcome.handoff) return { agent: current, text: outcome.text };
    await state.act.emit({ taskId, step: state.step, kind: "handoff", from: current.name, to: outcome.handoff.to, reason: outcome.handoff.reason, memory });
    current = byName.get(outcome.handoff.to)!;
  }
}
