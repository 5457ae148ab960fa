// The workflow a Flotilla task becomes in Temporal mode. It holds the conversation and runs the
// same tool loop as the in-process run (@flotilla/agent/loop), with activities as its effects:
// every model turn and every tool call is an activity of its own, so a crash or a retry resumes
// after the last completed one instead of starting over. Deterministic: no I/O here.
// Changing which activities run, in what order or with what input breaks the replay of running
// workflows: test/fixtures/histories pins them (see test/fixtures/record-histories.ts).

import { type LoopEffects, type LoopResult, runLoop, settle } from "@flotilla/agent/loop";
import { FlotillaError, type WaitRequest } from "@flotilla/core";
import { ActivityFailure, ApplicationFailure, condition, defineSignal, defineUpdate, patched, proxyActivities, setHandler } from "@temporalio/workflow";
import type { FlotillaActivities } from "./activities.ts";
import { activityRetryPolicy } from "./retry-policy.ts";
import {
  type AgentWorkflowInput,
  NEXT_WAIT,
  type RunResultJson,
  SIGNAL,
  type SignalMessage,
  type ToolInput,
  type ToolOutput,
  WAIT_FAILURE,
  type WaitDetails,
} from "./types.ts";

/** A Flotilla signal for the task (`handle.signal`), forwarded by the Flotilla worker that resumes it. */
export const flotillaSignal = defineSignal<[SignalMessage]>(SIGNAL);
/** Answers, once the run waits for a signal, what it waits for (the first waiting call's request). */
export const nextWait = defineUpdate<WaitRequest>(NEXT_WAIT);

/**
 * Waits for signals on behalf of tool calls: a call that must wait joins `waiting` (the first is the
 * request `nextWait` answers) until its signal comes, then is called again with what came. A signal
 * takes its request out of `waiting` as it arrives, so `nextWait` never answers one already answered.
 */
class SignalDesk {
  private readonly waiting: WaitRequest[] = [];
  private readonly answers = new Map<WaitRequest, SignalMessage>();
  /** Signals no call waited for yet. */
  private readonly early: SignalMessage[] = [];
  private readonly seen = new Set<string>();

  constructor() {
    setHandler(flotillaSignal, (message) => {
      if (this.seen.has(message.id)) return;
      this.seen.add(message.id);
      const i = this.waiting.findIndex((w) => w.name === message.name);
      if (i < 0) this.early.push(message);
      else this.answers.set(this.waiting.splice(i, 1)[0]!, message);
    });
    // The Flotilla worker asks this while it awaits the result; a run that never waits leaves it unanswered.
    setHandler(
      nextWait,
      async () => {
        await condition(() => this.waiting.length > 0);
        return this.waiting[0]!;
      },
      { unfinishedPolicy: "ABANDON" },
    );
  }

  /** The tool call's outcome: called, and called again after each signal it must wait for. */
  async call(input: ToolInput, act: FlotillaActivities): Promise<ToolOutput> {
    const signals: NonNullable<ToolInput["signals"]> = {};
    for (;;) {
      let wait: WaitDetails | undefined;
      try {
        return await act.toolCall(Object.keys(signals).length > 0 ? { ...input, signals } : input);
      } catch (err) {
        wait = waitOf(err);
        if (!wait) throw err;
      }
      const message = await this.answer({
        name: wait.signal,
        kind: wait.kind,
        toolCallId: input.call.toolCallId,
        tool: input.call.name,
        args: input.call.args,
        ...(wait.options.request !== undefined && { request: wait.options.request }),
        ...(wait.options.timeoutMs !== undefined && { timeoutMs: wait.options.timeoutMs }),
        onTimeout: wait.options.onTimeout ?? "fail",
      });
      signals[message.name] = "timedOut" in message ? { timedOut: true } : { payload: message.payload };
    }
  }

  /** The signal that answers `request`. No timer here: the Flotilla task's wait times out, and its worker says so with a timedOut signal. */
  private async answer(request: WaitRequest): Promise<SignalMessage> {
    const i = this.early.findIndex((m) => m.name === request.name);
    if (i >= 0) return this.early.splice(i, 1)[0]!;
    this.waiting.push(request);
    await condition(() => this.answers.has(request));
    const message = this.answers.get(request)!;
    this.answers.delete(request);
    return message;
  }
}

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

/** What a toolCall activity that must wait for a signal said, or undefined for any other failure. */
function waitOf(err: unknown): WaitDetails | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (!(cause instanceof ApplicationFailure) || cause.type !== WAIT_FAILURE) return undefined;
  return cause.details?.[0] as WaitDetails;
}

/** The loop's effects as activities. Each publishes its own events, so the loop streams none. */
function activityEffects(input: AgentWorkflowInput, act: FlotillaActivities, desk: SignalDesk): LoopEffects {
  const { taskId, memory } = input;
  return {
    enter: (agent, handoffTargets) => ({
      modelTurn: (messages, { step }) => act.modelTurn({ taskId, step, agent, messages, handoffTargets, memory }),
      toolCall: (call, { step }) => desk.call({ taskId, step, call, memory }, act),
    }),
    // The results' events and memory go out together, in call order, as in Redis mode.
    toolResults: (results, { step }) => act.emit({ taskId, step, kind: "tool-results", agent: input.agent.name, results, memory }),
    handoff: ({ from, to, reason, message }, step) => act.emit({ taskId, step, kind: "handoff", from, to, reason, ...(message && { message }), memory }),
  };
}

/** Runs a Flotilla agent or swarm durably; returns what Redis mode's agent executor returns. */
export async function flotillaAgent(input: AgentWorkflowInput): Promise<RunResultJson> {
  const act = activities(input);
  const desk = new SignalDesk();
  const messages = await act.begin({ taskId: input.taskId, input: input.input, memory: input.memory });
  let result: LoopResult;
  try {
    // Histories recorded before only the agent's own tools ran replay with the old rule (a toolCall
    // activity answered a call of any tool); every workflow since answers such a call in the loop.
    const ownToolsOnly = patched(OWN_TOOLS_ONLY);
    result = await settle(runLoop(input.agent, messages, activityEffects(input, act, desk), { ownToolsOnly }));
  } catch (err) {
    // The loop's own errors (a bad swarm) fail the workflow at once; an activity's failure passes as it is.
    if (err instanceof FlotillaError) throw ApplicationFailure.nonRetryable(err.message, err.code);
    throw err;
  }
  return act.finish({ taskId: input.taskId, agent: result.agent, text: result.text, steps: result.steps, usage: result.usage });
}
