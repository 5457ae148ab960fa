import { type LanguageModel, ModelResolver, type ModelResolverOptions, type ToolRegistry } from "@flotilla/agent";
import { lookupTool, modelTurn, parseOutput, resolveTools, runToolCall, toolDefinitions } from "@flotilla/agent/effects";
import { assistantMessage, inputMessage, toolMessage } from "@flotilla/agent/steps";
import {
  type AgentSpec,
  createKeys,
  isRetryable,
  type JsonValue,
  type Message,
  type RetentionOptions,
  resolveRetention,
  type TokenUsage,
  toTaskError,
} from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection } from "@flotilla/core/redis";
import { type AgentEvent, EventPublisher } from "@flotilla/events";
import { loadHistory, type MemoryStore, MemoryStores } from "@flotilla/memory";
import { readAttempt, readRunning } from "@flotilla/store";
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import type { AgentWorkflowInput, EmitInput, RunResultJson, ToolInput, ToolOutput, TurnInput, TurnOutput } from "./types.ts";

export interface ActivityOptions extends ModelResolverOptions {
  /** Redis the fleet uses (URL, options or an ioredis instance, which stays yours to close). @default "redis://127.0.0.1:6379" */
  redis?: RedisConnection | undefined;
  /** Key prefix shared with the fleet. @default "flotilla" */
  prefix?: string | undefined;
  tools?: ToolRegistry | undefined;
  /** One model for every agent, whatever its `model` says (tests, proxies). */
  model?: LanguageModel | undefined;
  /** Memory stores by name; `redis` (the connection above) is built in. */
  memory?: Record<string, MemoryStore> | undefined;
  retention?: RetentionOptions | undefined;
  /** How often a running activity heartbeats. @default 1_000 */
  heartbeatIntervalMs?: number | undefined;
}

/** The activities the Flotilla workflow calls: register them on a Temporal worker as they are. */
export type FlotillaActivities = ReturnType<typeof activitiesOf>;

/**
 * The activities of the Flotilla workflow: one model turn, one tool call, and the bookkeeping
 * around them. They publish the task's events live to its Redis stream and channel, under a scope
 * per step, so a retried activity does not repeat events a reader already saw; they heartbeat on a
 * timer, and a cancel reaches the model call or tool through its AbortSignal. `close()` once the
 * Temporal worker has stopped: it closes the Redis connection the activities opened.
 */
export function createActivities(options: ActivityOptions = {}): { activities: FlotillaActivities; close(): Promise<void> } {
  let conn: OwnedRedis | undefined;
  const redis = () => {
    conn ??= openRedis(options.redis, "command");
    return conn.redis;
  };
  return {
    activities: activitiesOf(options, redis),
    async close() {
      await closeRedis(conn);
    },
  };
}

function activitiesOf(options: ActivityOptions, redis: () => OwnedRedis["redis"]) {
  const keys = createKeys(options.prefix);
  const retention = resolveRetention(options.retention);
  const models = new ModelResolver(options);
  const stores = new MemoryStores(options.memory, redis, keys.prefix);
  const memoryStore = (name: string) => stores.get(name);
  const remember = async (memory: AgentWorkflowInput["memory"], taskId: string, key: string, message: Message) => {
    if (memory) await memoryStore(memory.store).append(memory.conversationId, [{ taskId, attempt: 1, key, message }]);
  };

  /** The attempt running the task now: events are stamped with it (1 for a task without a record). */
  const currentAttempt = async (taskId: string) => (await readAttempt(redis(), keys, taskId)) || 1;

  /** Runs `work` with a heartbeat timer and the activity's cancellation; failures become Temporal failures. */
  async function activity<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const timer = setInterval(() => ctx.heartbeat(), options.heartbeatIntervalMs ?? 1000);
    try {
      return await work(ctx.cancellationSignal);
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw err;
      throw asFailure(err);
    } finally {
      clearInterval(timer);
    }
  }

  async function publisher(taskId: string, scope: string, agent: string): Promise<EventPublisher> {
    return new EventPublisher(redis(), keys, retention, { taskId, attempt: await currentAttempt(taskId), agent, detailed: true, anyAttempt: true, scope });
  }

  async function publish(taskId: string, scope: string, agent: string, events: AgentEvent[]): Promise<void> {
    const p = await publisher(taskId, scope, agent);
    for (const e of events) p.emit(e);
    await p.flush();
  }

  return {
    /** Loads the conversation (memory) and adds the input to it; returns the messages the run starts with. */
    async begin(args: { taskId: string; input: JsonValue; memory?: AgentWorkflowInput["memory"] }): Promise<Message[]> {
      return activity(async () => {
        const user = inputMessage(args.input);
        if (!args.memory) return [user];
        const store = memoryStore(args.memory.store);
        const history = await loadHistory(store, args.memory.conversationId, args.taskId);
        await remember(args.memory, args.taskId, "input", user);
        return [...history, user];
      });
    },

    /** One model turn, streamed live: `text` and `tool_call` events, then its `step` event. */
    async modelTurn(args: TurnInput): Promise<TurnOutput> {
      return activity(async (signal) => {
        const agent: AgentSpec = args.agent;
        const model = options.model ?? (await models.resolve(agent.model));
        const tools = toolDefinitions(resolveTools(agent, options.tools), args.handoffTargets);
        const events = await publisher(args.taskId, `s${args.step}`, agent.name);
        const turn = modelTurn({ model, agent, messages: args.messages, tools, signal });
        let next = await turn.next();
        while (!next.done) {
          events.emit(next.value);
          next = await turn.next();
        }
        const result = next.value;
        events.emit({ type: "step", index: args.step, finishReason: result.finishReason, usage: result.usage });
        await events.flush();
        await remember(args.memory, args.taskId, `a${args.step}`, assistantMessage(result, agent.name, args.handoffTargets.length > 0));
        return { text: result.text, toolCalls: result.toolCalls, usage: result.usage, finishReason: result.finishReason };
      });
    },

    /**
     * One tool call, with the activity's cancellation as its signal, its progress events published
     * live (scoped to the call, so a retry repeats none); a tool's error is a result for the model,
     * but an UnrecoverableError fails the activity for good, and with it the workflow.
     */
    async toolCall(args: ToolInput): Promise<ToolOutput> {
      return activity(async (signal) => {
        const tool = lookupTool(options.tools, args.call.name);
        const running = await readRunning(redis(), keys, args.taskId);
        const attempt = running.attempt || 1;
        // Stamped with the task's agent, as the worker stamps the events of a run in process.
        const progress = new EventPublisher(redis(), keys, retention, {
          taskId: args.taskId,
          attempt,
          agent: running.agent ?? "",
          detailed: true,
          anyAttempt: true,
          scope: `p${args.step}:${args.call.toolCallId}`,
        });
        try {
          const { result, isError } = await runToolCall(tool, args.call, { signal, taskId: args.taskId, attempt, onProgress: (e) => progress.emit(e) });
          return { result, isError };
        } finally {
          // Progress that could not be published must not fail (and so repeat) the tool call itself.
          await progress.flush().catch(() => {});
        }
      });
    },

    /** Events and memory for what the workflow decided itself: a turn's tool results, a handoff. */
    async emit(args: EmitInput): Promise<void> {
      return activity(async () => {
        if (args.kind === "tool-results") {
          await publish(
            args.taskId,
            `r${args.step}`,
            args.agent,
            args.results.map(({ call, result, isError }) => ({ type: "tool_result", toolCallId: call.toolCallId, name: call.name, result, isError })),
          );
          for (const r of args.results) await remember(args.memory, args.taskId, `t${args.step}:${r.call.toolCallId}`, toolMessage(r));
          return;
        }
        await publish(args.taskId, `h${args.step}`, args.from, [
          { type: "handoff", from: args.from, to: args.to, ...(args.reason && { reason: args.reason }) },
        ]);
        if (args.message) await remember(args.memory, args.taskId, `u${args.step}`, args.message);
      });
    },

    /** Checks the answer against the agent's output schema, publishes the run's usage, returns the result. */
    async finish(args: { taskId: string; agent: AgentSpec; text: string; steps: number; usage: TokenUsage }): Promise<RunResultJson> {
      return activity(async () => {
        const output = args.agent.outputSchema ? parseOutput(args.text, args.agent.outputSchema) : undefined;
        await publish(args.taskId, "final", args.agent.name, [{ type: "usage", ...args.usage }]);
        return { text: args.text, ...(output !== undefined && { output }), steps: args.steps, usage: args.usage, agent: args.agent.name };
      });
    },
  };
}

/** A Flotilla error as a Temporal failure whose type is its code; one no retry can fix is non-retryable. */
function asFailure(err: unknown): unknown {
  if (err instanceof ApplicationFailure) return err;
  const taskError = toTaskError(err);
  return ApplicationFailure.create({
    type: taskError.code,
    message: taskError.message,
    nonRetryable: !isRetryable(err),
    cause: err instanceof Error ? err : undefined,
  });
}
