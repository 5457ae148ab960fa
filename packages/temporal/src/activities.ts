import { type LanguageModel, ModelResolver, type ModelResolverOptions, type ToolRegistry } from "@flotilla/agent";
import { approvalGate, lookupTool, modelTurn, parseOutput, resolveTools, runToolCall, toolDefinitions } from "@flotilla/agent/effects";
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
  WaitForSignal,
} from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection } from "@flotilla/core/redis";
import { type AgentEvent, EventPublisher } from "@flotilla/events";
import { loadHistory, type MemoryStore, MemoryStores } from "@flotilla/memory";
import { readRunning, TaskStore } from "@flotilla/store";
import { Context } from "@temporalio/activity";
import { ApplicationFailure } from "@temporalio/common";
import { abortReasonOf } from "./abort-reason.ts";
import type { FailureDetails } from "./failure-details.ts";
import { fenceActivity } from "./fence-activity.ts";
import {
  type AgentWorkflowInput,
  type EmitInput,
  type RunResultJson,
  type ToolInput,
  type ToolOutput,
  type TurnInput,
  type TurnOutput,
  WAIT_FAILURE,
  type WaitDetails,
} from "./types.ts";

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
  /** How often a running activity heartbeats (at most a third of its heartbeat timeout). @default 1_000 */
  heartbeatIntervalMs?: number | undefined;
  /**
   * Self-fencing: how long before its heartbeat timeout could pass an activity whose heartbeats
   * Temporal has not acknowledged stops its model call or tool (LEASE_EXPIRED), so it never runs on
   * once Temporal may have retried it elsewhere. At most a third of the timeout.
   * @default a tenth of the activity's heartbeat timeout
   */
  selfFenceMarginMs?: number | undefined;
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

  /**
   * How the task's events are stamped and filtered, as its Flotilla worker does in Redis mode: with
   * the attempt running it, the task's agent (a swarm's own name, whichever member speaks) and its
   * `detailed`. A workflow started without a task record (by hand, the replay fixtures): attempt 1,
   * `agent`, every event.
   */
  const stampOf = async (taskId: string, agent: string) => {
    const running = await readRunning(redis(), keys, taskId);
    return { attempt: running.attempt || 1, agent: running.agent ?? agent, detailed: running.detailed ?? true };
  };

  let tasks: TaskStore | undefined;
  /** The reason Redis mode would abort the run with, read from the task's record (Temporal's own if it cannot be read). */
  const abortReason = async (taskId: string, temporalReason: string) => {
    let record: Awaited<ReturnType<TaskStore["get"]>>;
    try {
      tasks ??= new TaskStore(redis(), keys, retention);
      record = await tasks.get(taskId);
    } catch {
      // Redis unreachable: the work must still be aborted, with Temporal's reason then.
      record = undefined;
    }
    return abortReasonOf(temporalReason, record, Date.now());
  };

  /**
   * Runs `work` with a heartbeat timer and the activity's cancellation; failures become Temporal
   * failures. A cancel aborts `work` with the reason Redis mode gives a run (the task's cancel and
   * its reason), not Temporal's ("NOT_FOUND"), and is reported to Temporal as the cancel it is.
   */
  async function activity<T>(taskId: string, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = Context.current();
    const aborted = new AbortController();
    // Temporal's own heartbeat carries a cancel back to the activity; the fence's acknowledged ones
    // stop the activity when Temporal may have given up on it.
    const timer = setInterval(() => ctx.heartbeat(), options.heartbeatIntervalMs ?? 1000);
    const stopWith = (temporalReason: string) => void abortReason(taskId, temporalReason).then((reason) => aborted.abort(reason));
    const fence = fenceActivity(ctx, {
      taskId,
      intervalMs: options.heartbeatIntervalMs ?? 1000,
      marginMs: options.selfFenceMarginMs,
      abort: aborted,
      gone: () => stopWith("NOT_FOUND"),
    });
    const onCancel = () =>
      stopWith(ctx.cancellationSignal.reason instanceof Error ? ctx.cancellationSignal.reason.message : String(ctx.cancellationSignal.reason));
    if (ctx.cancellationSignal.aborted) onCancel();
    else ctx.cancellationSignal.addEventListener("abort", onCancel, { once: true });
    try {
      // Nothing runs before Temporal has answered that it still holds the activity.
      if (fence) await untilAborted(fence.ready, aborted.signal);
      return await work(aborted.signal);
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason;
      throw asFailure(err);
    } finally {
      clearInterval(timer);
      fence?.stop();
      ctx.cancellationSignal.removeEventListener("abort", onCancel);
    }
  }

  async function publisher(taskId: string, scope: string, agent: string): Promise<EventPublisher> {
    return new EventPublisher(redis(), keys, retention, { taskId, ...(await stampOf(taskId, agent)), anyAttempt: true, scope });
  }

  async function publish(taskId: string, scope: string, agent: string, events: AgentEvent[]): Promise<void> {
    const p = await publisher(taskId, scope, agent);
    for (const e of events) p.emit(e);
    await p.flush();
  }

  return {
    /** Loads the conversation (memory) and adds the input to it; returns the messages the run starts with. */
    async begin(args: { taskId: string; input: JsonValue; memory?: AgentWorkflowInput["memory"] }): Promise<Message[]> {
      return activity(args.taskId, async () => {
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
      return activity(args.taskId, async (signal) => {
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
     * but an UnrecoverableError fails the activity for good, and with it the workflow. A call that
     * must wait for a signal (its tool needs approval, or calls waitForSignal) fails with type
     * WAIT_FAILURE: the workflow waits for the signal and calls it again with `signals`.
     */
    async toolCall(args: ToolInput): Promise<ToolOutput> {
      return activity(args.taskId, async (signal) => {
        const tool = lookupTool(options.tools, args.call.name);
        const stamp = await stampOf(args.taskId, "");
        const progress = new EventPublisher(redis(), keys, retention, {
          taskId: args.taskId,
          ...stamp,
          anyAttempt: true,
          scope: `p${args.step}:${args.call.toolCallId}`,
        });
        try {
          const refused = approvalGate(tool, args.call, args.signals);
          if (refused) return refused;
          const { result, isError } = await runToolCall(tool, args.call, {
            signal,
            taskId: args.taskId,
            attempt: stamp.attempt,
            onProgress: (e) => progress.emit(e),
            signals: args.signals,
          });
          return { result, isError };
        } catch (err) {
          if (!(err instanceof WaitForSignal)) throw err;
          const details: WaitDetails = { signal: err.signal, kind: err.kind, options: err.options };
          throw ApplicationFailure.create({ type: WAIT_FAILURE, message: err.message, nonRetryable: true, details: [details] });
        } finally {
          // Progress that could not be published must not fail (and so repeat) the tool call itself.
          await progress.flush().catch(() => {});
        }
      });
    },

    /** Events and memory for what the workflow decided itself: a turn's tool results, a handoff. */
    async emit(args: EmitInput): Promise<void> {
      return activity(args.taskId, async () => {
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

    /**
     * Publishes the run's usage, checks the answer against the agent's output schema, returns the
     * result. The usage goes first, as in Redis mode: an answer that misses the schema fails the
     * task with its usage published, and recorded (it travels in the failure's details).
     */
    async finish(args: { taskId: string; agent: AgentSpec; text: string; steps: number; usage: TokenUsage }): Promise<RunResultJson> {
      return activity(args.taskId, async () => {
        await publish(args.taskId, "final", args.agent.name, [{ type: "usage", ...args.usage }]);
        let output: JsonValue | undefined;
        try {
          output = args.agent.outputSchema ? parseOutput(args.text, args.agent.outputSchema) : undefined;
        } catch (err) {
          throw asFailure(err, { usage: args.usage });
        }
        return { text: args.text, ...(output !== undefined && { output }), steps: args.steps, usage: args.usage, agent: args.agent.name };
      });
    },
  };
}

/** `promise`, or `signal`'s reason thrown once it aborts first. */
function untilAborted(promise: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    });
  });
}

/** A Flotilla error as a Temporal failure whose type is its code; one no retry can fix is non-retryable. */
function asFailure(err: unknown, details?: FailureDetails): unknown {
  if (err instanceof ApplicationFailure) return err;
  const taskError = toTaskError(err);
  return ApplicationFailure.create({
    type: taskError.code,
    message: taskError.message,
    nonRetryable: !isRetryable(err),
    cause: err instanceof Error ? err : undefined,
    ...(details && { details: [details] }),
  });
}
