// The workflow a Flotilla task becomes in Temporal mode. It holds the conversation and runs the
// same tool loop as the in-process run (@flotilla/agent/loop), with activities as its effects:
// every model turn and every tool call is an activity of its own, so a crash or a retry resumes
// after the last completed one instead of starting over. Deterministic: no I/O here.
// Changing which activities run, in what order or with what input breaks the replay of running
// workflows: test/fixtures/histories pins them (see test/fixtures/record-histories.ts).

import { type LoopEffects, type LoopResult, runLoop, settle } from "@flotilla/agent/loop";
import { FlotillaError } from "@flotilla/core";
import { ApplicationFailure, patched, proxyActivities } from "@temporalio/workflow";
import type { FlotillaActivities } from "./activities.ts";
import { activityRetryPolicy } from "./retry-policy.ts";
import type { AgentWorkflowInput, RunResultJson } from "./types.ts";

function activities(input: AgentWorkflowInput): FlotillaActivities {
  const settings = input.activity ?? {};
  return proxyActivities<FlotillaActivities>({
    startToCloseTimeout: settings.startToCloseTimeoutMs ?? 600_000,
    // Activities heartbeat on a timer (every second), not per event: a slow model stays alive.
    heartbeatTimeout: settings.heartbeatTimeoutMs ?? 10_000,
    // Only the policy changes with the task's retry settings, never which activities run: workflows
    // started without them (all those recorded before) schedule exactly what they did.
    retry: activityRetryPolicy(settings, input.retry),
  });
}

/** Temporal patch id of the rule that a model may call only its agent's own tools. */
export const OWN_TOOLS_ONLY = "flotilla-own-tools-only";

/** The loop's effects as activities. Each publishes its own events, so the loop streams none. */
function activityEffects(input: AgentWorkflowInput, act: FlotillaActivities): LoopEffects {
  const { taskId, memory } = input;
  return {
    enter: (agent, handoffTargets) => ({
      modelTurn: (messages, { step }) => act.modelTurn({ taskId, step, agent, messages, handoffTargets, memory }),
      toolCall: (call, { step }) => act.toolCall({ taskId, step, call, memory }),
    }),
    // The results' events and memory go out together, in call order, as in Redis mode.
    toolResults: (results, { step }) => act.emit({ taskId, step, kind: "tool-results", agent: input.agent.name, results, memory }),
    handoff: ({ from, to, reason, message }, step) => act.emit({ taskId, step, kind: "handoff", from, to, reason, ...(message && { message }), memory }),
  };
}

/** Runs a Flotilla agent or swarm durably; returns what Redis mode's agent executor returns. */
export async function flotillaAgent(input: AgentWorkflowInput): Promise<RunResultJson> {
  const act = activities(input);
  const messages = await act.begin({ taskId: input.taskId, input: input.input, memory: input.memory });
  let result: LoopResult;
  try {
    // Histories recorded before only the agent's own tools ran replay with the old rule (a toolCall
    // activity answered a call of any tool); every workflow since answers such a call in the loop.
    const ownToolsOnly = patched(OWN_TOOLS_ONLY);
    result = await settle(runLoop(input.agent, messages, activityEffects(input, act), { ownToolsOnly }));
  } catch (err) {
    // The loop's own errors (a bad swarm) fail the workflow at once; an activity's failure passes as it is.
    if (err instanceof FlotillaError) throw ApplicationFailure.nonRetryable(err.message, err.code);
    throw err;
  }
  return act.finish({ taskId: input.taskId, agent: result.agent, text: result.text, steps: result.steps, usage: result.usage });
}
