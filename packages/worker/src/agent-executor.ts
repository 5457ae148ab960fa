import { type LanguageModel, ModelResolver, type ModelResolverOptions, type RunResult, run, type ToolRegistry } from "@flotilla/agent";
import { ErrorCodes, FlotillaError, type JsonValue, type Message, parseInput, type RateLimiter } from "@flotilla/core";
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
      let history: Message[] | undefined;
      let onMessage: ((m: Message) => Promise<void>) | undefined;
      if (ctx.metadata.memory !== undefined) {
        const ref = parseInput(MemoryRefSchema, ctx.metadata.memory, "metadata.memory");
        if (!options.memory) throw new FlotillaError(ErrorCodes.UNKNOWN_MEMORY, "this worker has no memory stores");
        const store = options.memory.get(ref.store);
        history = await loadHistory(store, ref.conversationId, ctx.taskId);
        onMessage = (message) => store.append(ref.conversationId, [{ taskId: ctx.taskId, attempt: ctx.attempt, message }]);
      }
      const events = run.stream(ctx.agent, ctx.input, {
        signal: ctx.signal,
        models,
        ...(options.tools && { tools: options.tools }),
        ...(options.model && { model: options.model }),
        ...(history && { history }),
        ...(onMessage && { onMessage }),
        ...(options.rateLimiter && { rateLimiter: options.rateLimiter }),
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
    },
  };
}
