import type { JsonValue, TokenUsage } from "./schemas.ts";

/**
 * What a task that ran an agent or a swarm resolves with (`handle.result()`), as the worker records
 * it. `O` is the type of the agent's output schema; `output` is there only when the agent has one,
 * so it is optional whenever `O` admits `undefined` (the default: no schema, or one not known in types).
 */
export type AgentResult<O = JsonValue | undefined> = {
  /** The final agent's last answer. */
  text: string;
  steps: number;
  usage: TokenUsage;
  /** The agent that gave the answer (a swarm's last). */
  agent: string;
} & (undefined extends O ? { /** The answer parsed and checked against the agent's `outputSchema`. */ output?: O } : { output: O });

/**
 * A runnable (Agent, Swarm) that says, in types only, the type of its answer's `output`: the
 * property is declared, never set, so it costs nothing at runtime and never travels in the payload.
 * (A one-element tuple, so `O` keeps an `undefined` and stays covariant.)
 */
export interface OutputCarrier<O> {
  readonly "~output"?: [O];
}

/**
 * What a task submitted with `A` resolves with: `AgentResult<O>` for a runnable that carries its
 * output type `O`, else `AgentResult` (a plain spec, `{ name, model, … }`, runs the same way).
 */
export type ResultOf<A> = A extends OutputCarrier<infer O> ? (unknown extends O ? AgentResult : AgentResult<O>) : AgentResult;
