// The tool loop's effects in process: direct model and tool calls, each in its OpenTelemetry span
// (a child of whatever span is active: the worker's flotilla.execute), events yielded as they
// happen, and every message handed to `onMessage` as it joins the conversation.
import { ErrorCodes, FlotillaError, type Message, type RateLimiter, WaitForSignal } from "@flotilla/core";
import { context, type Exception, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import type { InboxMessage, LoopEffects } from "./loop.ts";
import type { LanguageModel, ModelResolver } from "./model.ts";
import { toolMessage } from "./steps.ts";
import { approvalGate, resolveTools, runToolCall, type ToolRegistry, toolDefinitions } from "./tool.ts";
import { modelTurn, type TurnResult } from "./turn.ts";

export interface LocalEffectsOptions {
  signal: AbortSignal;
  resolver: ModelResolver;
  model?: LanguageModel | undefined;
  tools?: ToolRegistry | undefined;
  taskId: string;
  attempt: number;
  onMessage?: ((message: Message) => void | Promise<void>) | undefined;
  /** Fleet-wide rate limits that agents (`rateLimit`) and tools draw from. */
  rateLimiter?: RateLimiter | undefined;
  /** Messages sent to the run, asked for at each turn boundary (see LoopEffects.inbox). */
  inbox?: (() => Promise<InboxMessage[]>) | undefined;
}

const tracer = () => trace.getTracer("@flotilla/agent");

/** What a span records of a failure: the error itself, or a name and message for anything else thrown. */
const asException = (err: unknown): Exception & { message: string } => (err instanceof Error ? err : { name: "Error", message: String(err) });

/** Ends a span, marking it failed when `exception` is given. */
function endSpan(span: Span, exception?: Exception & { message: string }): void {
  if (exception !== undefined) {
    span.recordException(exception);
    span.setStatus({ code: SpanStatusCode.ERROR, message: exception.message });
  }
  span.end();
}

/** The limiter that grants `limit`, or an UNKNOWN_RATE_LIMIT error naming who draws on it when this worker has none. */
function limiterFor(limiter: RateLimiter | undefined, limit: string, who: string): RateLimiter {
  if (limiter) return limiter;
  throw new FlotillaError(ErrorCodes.UNKNOWN_RATE_LIMIT, `${who} draws from rate limit "${limit}", and this worker configures no rate limits`, {
    retryable: false,
  });
}

/**
 * A turn's tokens before it runs, for a tokens-per-minute limit: its prompt at about 4 characters a
 * token, and the most it may answer (`maxOutputTokens`) when the agent caps it. Settled with the
 * usage the provider reports once the turn ends.
 */
function estimateTokens(instructions: string, messages: readonly Message[], maxOutputTokens: unknown): number {
  let chars = instructions.length;
  for (const m of messages) chars += JSON.stringify(m).length;
  return Math.ceil(chars / 4) + (typeof maxOutputTokens === "number" ? maxOutputTokens : 0);
}

export function localEffects(options: LocalEffectsOptions): LoopEffects {
  const { signal } = options;
  const remember = async (message: Message) => {
    await options.onMessage?.(message);
  };
  return {
    async enter(agent, handoffTargets) {
      const model = options.model ?? (await options.resolver.resolve(agent.model));
      const tools = resolveTools(agent, options.tools);
      const definitions = toolDefinitions(tools, handoffTargets);
      return {
        async *modelTurn(messages, { step }) {
          if (signal.aborted) throw signal.reason;
          const span = tracer().startSpan("flotilla.model_turn", {
            attributes: { "flotilla.agent": agent.name, "gen_ai.request.model": agent.model, "flotilla.step": step },
          });
          let turn: TurnResult;
          const limit = agent.rateLimit;
          const limiter = limit === undefined ? undefined : limiterFor(options.rateLimiter, limit, `agent ${agent.name}`);
          let estimate = 0;
          try {
            turn = yield* modelTurn({
              model,
              agent,
              messages,
              tools: definitions,
              signal,
              ...(limiter &&
                limit !== undefined && {
                  beforeRequest: () => {
                    estimate = estimateTokens(agent.instructions, messages, agent.options.maxOutputTokens);
                    return limiter.acquire(limit, { requests: 1, tokens: estimate }, signal);
                  },
                  beforeSend: () => limiter.waitOutPause?.(limit, signal) ?? Promise.resolve(),
                  onRetryAfter: (ms: number) => limiter.pause(limit, ms),
                }),
            });
            if (limiter && limit !== undefined) await limiter.account(limit, turn.usage.totalTokens - estimate);
            span.setAttributes({ "gen_ai.usage.input_tokens": turn.usage.inputTokens, "gen_ai.usage.output_tokens": turn.usage.outputTokens });
            endSpan(span);
          } catch (err) {
            // A rate limit that releases the slot stops the run before the turn: not a failure of it.
            endSpan(span, err instanceof WaitForSignal ? undefined : asException(err));
            throw err;
          }
          yield { type: "step", index: step, finishReason: turn.finishReason, usage: turn.usage };
          return turn;
        },
        async toolCall(call, _turn, emit, signals) {
          const tool = tools.find((t) => t.name === call.name);
          const refused = approvalGate(tool, call, signals);
          if (refused) return refused;
          if (tool?.rateLimit !== undefined)
            await limiterFor(options.rateLimiter, tool.rateLimit, `tool ${tool.name}`).acquire(tool.rateLimit, { requests: 1 }, signal);
          const span = tracer().startSpan("flotilla.tool", { attributes: { "flotilla.tool": call.name, "flotilla.tool_call_id": call.toolCallId } });
          try {
            const out = await context.with(trace.setSpan(context.active(), span), () =>
              runToolCall(tool, call, { signal, taskId: options.taskId, attempt: options.attempt, onProgress: emit, signals }),
            );
            endSpan(span, out.isError ? { name: "ToolError", message: String(out.result) } : undefined);
            return out;
          } catch (err) {
            endSpan(span, asException(err));
            throw err;
          }
        },
      };
    },
    answered: remember,
    async *toolResults(results) {
      for (const r of results) {
        yield { type: "tool_result", toolCallId: r.call.toolCallId, name: r.call.name, result: r.result, isError: r.isError };
        await remember(toolMessage(r));
      }
    },
    async *handoff({ from, to, reason, message }) {
      yield { type: "handoff", from, to, ...(reason && { reason }) };
      if (message) await remember(message);
    },
    ...(options.inbox && { inbox: options.inbox, joined: remember }),
  };
}
