// Plain data shared by the workflow (which runs in Temporal's sandbox and may import nothing with
// side effects) and the activities. Type-only imports: erased from the workflow bundle.
import type { AgentSpec, Backoff, JsonValue, Message, RunnableSpec, TokenUsage, WaitOptions, WaitRequest } from "@flotilla/core";

/** What a task's workflow is started with. Its workflow id is the task id. */
export interface AgentWorkflowInput {
  taskId: string;
  agent: RunnableSpec;
  input: JsonValue;
  /** `metadata.memory` of the task, if it continues a conversation. */
  memory?: { store: string; conversationId: string } | undefined;
  /** Activity settings (the executor's). */
  activity?: ActivitySettings | undefined;
  /** The task's retry policy, mapped onto the activities' (see activityRetryPolicy); absent in workflows started before it was passed. */
  retry?: TaskRetry | undefined;
}

/** A task's retry policy as submitted: retries after a failed attempt, and the wait before each. */
export interface TaskRetry {
  maxRetries: number;
  /** The task's own backoff, else its worker's. */
  backoff: Backoff;
}

export interface ActivitySettings {
  /** A running activity that has not heartbeated for this long is retried elsewhere. @default 10_000 */
  heartbeatTimeoutMs?: number | undefined;
  /** @default 600_000 */
  startToCloseTimeoutMs?: number | undefined;
  /** Attempts of one activity at most (retryable failures and timeouts), unless the task's `maxRetries` asks for more. @default 5 */
  maximumAttempts?: number | undefined;
}

export interface RunResultJson {
  text: string;
  output?: JsonValue;
  steps: number;
  usage: TokenUsage;
  agent: string;
  [key: string]: JsonValue | undefined;
}

export interface ToolCallJson {
  toolCallId: string;
  name: string;
  args: JsonValue;
}

export interface TurnInput {
  taskId: string;
  /** Index of this model turn in the run (0, 1, …): scopes its events so a retry does not repeat them. */
  step: number;
  agent: AgentSpec;
  messages: readonly Message[];
  /** Set for a swarm member: the agents it may hand over to. */
  handoffTargets: readonly string[];
  memory?: AgentWorkflowInput["memory"];
}

export interface TurnOutput {
  text: string;
  toolCalls: ToolCallJson[];
  usage: TokenUsage;
  finishReason: string;
}

export interface ToolInput {
  taskId: string;
  step: number;
  call: ToolCallJson;
  memory?: AgentWorkflowInput["memory"];
  /** How the call's waits for signals ended so far, by signal name (absent until it has waited). */
  signals?: Record<string, { payload: JsonValue } | { timedOut: true }>;
}

/** The failure type of a toolCall activity whose call must wait for a signal; its details hold a WaitDetails. */
export const WAIT_FAILURE = "FLOTILLA_WAIT";

/** What a toolCall activity that must wait tells the workflow. */
export interface WaitDetails {
  signal: string;
  kind: WaitRequest["kind"];
  options: WaitOptions;
}

/**
 * The workflow signal a Flotilla signal becomes, sent by the executor that resumes the task; `id`
 * tells a resend (a resumed attempt that ran again) from a new signal of the same name.
 */
export type SignalMessage = { id: string; name: string; payload: JsonValue } | { id: string; name: string; timedOut: true };

/** The workflow's signal that carries a SignalMessage. */
export const SIGNAL = "flotilla.signal";
/** The workflow's update that answers, once the run waits for a signal, what it waits for (a WaitRequest). */
export const NEXT_WAIT = "flotilla.nextWait";

export interface ToolOutput {
  result: JsonValue;
  isError: boolean;
}

/** Events and memory for what the workflow decided itself: a turn's tool results, a handoff. */
export type EmitInput =
  | {
      taskId: string;
      step: number;
      kind: "tool-results";
      /** The task's agent (or swarm) name, stamped on the events as the task record has it. */
      agent: string;
      results: Array<{ call: ToolCallJson } & ToolOutput>;
      memory?: AgentWorkflowInput["memory"];
    }
  | {
      taskId: string;
      step: number;
      kind: "handoff";
      from: string;
      to: string;
      reason?: string | undefined;
      /** A pipeline's next input, joining the conversation. */
      message?: Message;
      memory?: AgentWorkflowInput["memory"];
    };
