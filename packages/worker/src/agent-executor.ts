import { type LanguageModel, ModelResolver, type ModelResolverOptions, type RunResult, run, type ToolRegistry } from "@flotilla/agent";
import {
  CorruptRecordError,
  ErrorCodes,
  FlotillaError,
  type JsonValue,
  type Message,
  parseInput,
  type RateLimiter,
  type Resumption,
  TaskSuspended,
} from "@flotilla/core";
import { loadHistory, MemoryRefSchema, type MemoryStores } from "@flotilla/memory";
import type { ExecutionContext, Executor } from "./executor.ts";

/** The result a task records: what the run returned, as plain JSON. */
const toJson = ({ text, output, steps, usage, agent }: RunResult): JsonValue => ({
  text,
  ...(output !== undefined && { output }),
  steps,
  usage: { ...usage },
  agent,
});

export interface AgentExecutorOptions extends ModelResolverOptions {
  tools?: ToolRegistry | undefined;
  /** One model for every agent, whatever its `model` says (tests, proxies). */
  model?: LanguageModel | undefined;
  /** Memory stores by the name tasks give in `metadata.memory.store`. */
  memory?: MemoryStores | undefined;
  /** Fleet-wide rate limits that agents and tools draw from. */
  rateLimiter?: RateLimiter | undefined;
}

/**
 * Runs agents and swarms in this process with @flotilla/agent's runtime. When a task's metadata
 * names a memory (`{ memory: { store?, conversationId } }`), the conversation's earlier turns are
 * loaded and put before the input, and the input and every message of the run are saved as they
 * happen (so a crash mid-run keeps what was said; a retry supersedes its earlier attempts).
 */
export function agentExecutor(options: AgentExecutorOptions = {}): Executor {
  const models = new ModelResolver(options);
  return {
    async execute(ctx: ExecutionContext): Promise<JsonValue> {
      const { resume, memoryAttempt } = unwrap(ctx.resume, ctx.attempt);
      try {
        return await runAgent(ctx, resume, memoryAttempt);
      } catch (err) {
        // The attempt that began the run keeps speaking for it in memory, however often it waits:
        // memory keeps only a task's latest attempt, and the messages before the wait are that one's.
        if (err instanceof TaskSuspended) throw new TaskSuspended(err.request, { run: err.state, memoryAttempt });
        throw err;
      }
    },
  };

  async function runAgent(ctx: ExecutionContext, resume: Resumption | undefined, memoryAttempt: number): Promise<JsonValue> {
    let history: Message[] | undefined;
    let onMessage: ((m: Message) => Promise<void>) | undefined;
    if (ctx.metadata.memory !== undefined) {
      const ref = parseInput(MemoryRefSchema, ctx.metadata.memory, "metadata.memory");
      if (!options.memory) throw new FlotillaError(ErrorCodes.UNKNOWN_MEMORY, "this worker has no memory stores");
      const store = options.memory.get(ref.store);
      // A resumed run's saved conversation holds its history already.
      if (!resume) history = await loadHistory(store, ref.conversationId, ctx.taskId);
      onMessage = (message) => store.append(ref.conversationId, [{ taskId: ctx.taskId, attempt: memoryAttempt, message }]);
    }
    const events = run.stream(ctx.agent, ctx.input, {
      signal: ctx.signal,
      models,
      ...(options.tools && { tools: options.tools }),
      ...(options.model && { model: options.model }),
      ...(history && { history }),
      ...(onMessage && { onMessage }),
      ...(options.rateLimiter && { rateLimiter: options.rateLimiter }),
      ...(resume && { resume }),
      ...(ctx.takeMessages && { inbox: ctx.takeMessages }),
      taskId: ctx.taskId,
      attempt: ctx.attempt,
    });
    for (;;) {
      const next = await events.next();
      if (next.done) {
        ctx.reportUsage(next.value.usage);
        return toJson(next.value);
      }
      ctx.emit(next.value);
      if (next.value.type === "usage") {
        const { inputTokens, outputTokens, totalTokens } = next.value;
        ctx.reportUsage({ inputTokens, outputTokens, totalTokens });
      }
    }
  }
}

/** The run's own saved state and the attempt that began it, from what a suspended attempt of this executor saved. */
function unwrap(resumption: Resumption | undefined, attempt: number): { resume: Resumption | undefined; memoryAttempt: number } {
  if (!resumption) return { resume: undefined, memoryAttempt: attempt };
  const saved = resumption.state as { run?: JsonValue; memoryAttempt?: unknown } | null;
  if (typeof saved !== "object" || saved === null || saved.run === undefined || typeof saved.memoryAttempt !== "number") {
    throw new CorruptRecordError("saved run state", "not what the agent executor saves");
  }
  return { resume: { ...resumption, state: saved.run }, memoryAttempt: saved.memoryAttempt };
}
