import { type ModelProvider, type ProviderRegistry, type RunResult, run, type ToolRegistry } from "@flotilla/agent";
import type { JsonValue } from "@flotilla/core";

/** The result a task records: what the run returned, as plain JSON. */
const toJson = ({ text, steps, usage }: RunResult): JsonValue => ({ text, steps, usage: { ...usage } });

import type { ExecutionContext, Executor } from "./executor.ts";

export interface AgentExecutorOptions {
  tools?: ToolRegistry | undefined;
  providers?: ProviderRegistry | undefined;
  /** Use this provider for every model. */
  provider?: ModelProvider | undefined;
}

/** Runs agents in this process with @flotilla/agent's runtime. */
export function agentExecutor(options: AgentExecutorOptions = {}): Executor {
  return {
    async execute(ctx: ExecutionContext): Promise<JsonValue> {
      const events = run.stream(ctx.agent, ctx.input, {
        signal: ctx.signal,
        ...(options.tools && { tools: options.tools }),
        ...(options.providers && { providers: options.providers }),
        ...(options.provider && { provider: options.provider }),
        taskId: ctx.taskId,
        attempt: ctx.attempt,
      });
      for (;;) {
        const next = await events.next();
        if (next.done) return toJson(next.value);
        ctx.emit(next.value);
      }
    },
  };
}
