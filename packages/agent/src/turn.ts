import { APICallError, type LanguageModelV4FunctionTool, type LanguageModelV4StreamPart } from "@ai-sdk/provider";
import {
  type AgentSpec,
  ErrorCodes,
  type ExponentialBackoff,
  exponentialDelay,
  FlotillaError,
  type JsonValue,
  type Message,
  parseJsonOr,
  sleep,
  WaitForSignal,
} from "@flotilla/core";
import type { AgentEvent, Usage } from "@flotilla/events";
import type { TurnOutput } from "./loop.ts";
import { toPrompt } from "./messages.ts";
import type { LanguageModel } from "./model.ts";
import { withRequestHooks } from "./provider-fetch.ts";
import { MAX_RETRY_AFTER_MS, retryAfterMs } from "./retry-after.ts";
import type { ToolCall } from "./steps.ts";

/** What one model turn produced. */
export type TurnResult = TurnOutput;

export interface TurnRequest {
  model: LanguageModel;
  agent: AgentSpec;
  messages: readonly Message[];
  /** Tools offered this turn, as JSON Schema. */
  tools: readonly LanguageModelV4FunctionTool[];
  signal: AbortSignal;
  /** Retries of a retryable API error that came before any output. @default 2 */
  maxRetries?: number;
  /** Longest wait taken from a provider's Retry-After before a retry. @default MAX_RETRY_AFTER_MS (60 s) */
  maxRetryAfterMs?: number;
  /** Awaited before each request to the provider, retries included (a rate limit's acquire). */
  beforeRequest?: (() => Promise<void>) | undefined;
  /**
   * Awaited immediately before each request leaves, when the provider sends through providerFetch
   * (a rate limit's pause that came after the grant holds it).
   */
  beforeSend?: (() => Promise<void>) | undefined;
  /**
   * Told the wait a provider's Retry-After asked for (at most `maxRetryAfterMs`): a rate limit's
   * pause. Through providerFetch, the moment the response's headers arrive; else when the error
   * reaches the turn. Once per request.
   */
  onRetryAfter?: ((ms: number) => Promise<void>) | undefined;
}

/** Pause before retrying a turn's API error number 0, 1, …, when the provider names none: 500 ms, doubling (the retries are few). */
const TURN_RETRY_BACKOFF: ExponentialBackoff = { baseMs: 500 };

/** Agent options passed to the model as call settings. */
const SETTINGS = ["temperature", "maxOutputTokens", "topP", "topK", "seed", "presencePenalty", "frequencyPenalty"] as const;

const ZERO: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };

/**
 * One model turn: streams the reply, yielding `text` and `tool_call` events as they come, and
 * returns the text, the tool calls, usage and the finish reason. Provider errors become MODEL_ERROR
 * (retryable as the provider says); one that comes before any output is retried here, after the
 * provider's Retry-After (at most `maxRetryAfterMs`) or else with backoff. Another error keeps the
 * `retryable` its thrower gave it. An abort ends it with the signal's reason.
 */
export async function* modelTurn(request: TurnRequest): AsyncGenerator<AgentEvent, TurnResult, undefined> {
  const { model, agent, signal } = request;
  const settings: Record<string, unknown> = {};
  for (const key of SETTINGS) if (typeof agent.options[key] === "number") settings[key] = agent.options[key];
  const providerOptions = Object.fromEntries(
    Object.entries(agent.options).filter(([k, v]) => !SETTINGS.includes(k as never) && k !== "maxSteps" && v !== null && typeof v === "object"),
  ) as Record<string, Record<string, JsonValue>>;
  const maxRetries = request.maxRetries ?? 2;
  const longestPause = request.maxRetryAfterMs ?? MAX_RETRY_AFTER_MS;
  for (let attempt = 0; ; attempt++) {
    let produced = false;
    // The fleet's pause for this request's Retry-After, once made (by providerFetch or below).
    let pausing: Promise<void> | undefined;
    const pauseFleet = (asked: number): Promise<void> | undefined => {
      if (!request.onRetryAfter) return undefined;
      if (!pausing) {
        pausing = request.onRetryAfter(Math.min(asked, longestPause));
        // Awaited below when the turn retries; a turn that gives up must not leave it unhandled.
        pausing.catch(() => {});
      }
      return pausing;
    };
    try {
      await request.beforeRequest?.();
      const hooks = { beforeSend: request.beforeSend, onRetryAfter: (asked: number) => void pauseFleet(asked) };
      const { stream } = await withRequestHooks(hooks, () =>
        model.doStream({
          prompt: toPrompt(agent.instructions, request.messages),
          ...(request.tools.length > 0 && { tools: [...request.tools], toolChoice: { type: "auto" } }),
          ...(agent.outputSchema && { responseFormat: { type: "json", schema: responseSchema(agent.outputSchema) } }),
          ...settings,
          providerOptions: providerOptions as never,
          abortSignal: signal,
        }),
      );
      let text = "";
      const toolCalls: ToolCall[] = [];
      let usage: Usage = ZERO;
      let finishReason = "stop";
      for await (const part of stream as AsyncIterable<LanguageModelV4StreamPart>) {
        if (signal.aborted) throw signal.reason;
        switch (part.type) {
          case "text-delta":
            if (!part.delta) break;
            produced = true;
            text += part.delta;
            yield { type: "text", delta: part.delta };
            break;
          case "tool-call": {
            produced = true;
            const call = { toolCallId: part.toolCallId, name: part.toolName, args: parseJsonOr(part.input, part.input) as JsonValue };
            toolCalls.push(call);
            yield { type: "tool_call", ...call };
            break;
          }
          case "finish": {
            const input = part.usage.inputTokens.total ?? 0;
            const output = part.usage.outputTokens.total ?? 0;
            usage = { inputTokens: input, outputTokens: output, totalTokens: input + output };
            finishReason = part.finishReason.unified;
            break;
          }
          case "error":
            throw part.error;
        }
      }
      if (signal.aborted) throw signal.reason;
      return { text, toolCalls, usage, finishReason };
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      // Its rate limit releases the slot: the run stops before this turn, which runs when it resumes.
      if (err instanceof WaitForSignal) throw err;
      const asked = APICallError.isInstance(err) ? retryAfterMs(err.responseHeaders) : undefined;
      // The whole fleet backs off, not only this turn (the limit it draws from grants nothing
      // meanwhile), whether or not this turn tries again. Made already when providerFetch saw the headers.
      const paused = asked === undefined ? undefined : pauseFleet(asked);
      const error = modelError(err);
      if (produced || attempt >= maxRetries || !APICallError.isInstance(err) || !err.isRetryable) throw error;
      await paused;
      await sleep(asked === undefined ? exponentialDelay(TURN_RETRY_BACKOFF, attempt) : Math.min(asked, longestPause), signal);
    }
  }
}

/** The output schema as the provider is given it: without `$schema`, as tools are (providers reject or ignore it). */
function responseSchema(schema: Record<string, JsonValue>): never {
  const { $schema: _, ...rest } = schema;
  return rest as never;
}

/** Whether `err` is a FlotillaError, also one from another copy of @flotilla/core (which `instanceof` misses). */
const isFlotillaError = (err: unknown): err is FlotillaError =>
  err instanceof FlotillaError ||
  (err instanceof Error && typeof (err as { code?: unknown }).code === "string" && typeof (err as { toTaskError?: unknown }).toTaskError === "function");

/** The `retryable` the thrower of a plain error set on it, kept on the MODEL_ERROR that wraps it. */
const thrownRetryable = (err: unknown): { retryable?: boolean } => {
  const retryable = err !== null && typeof err === "object" ? (err as { retryable?: unknown }).retryable : undefined;
  return typeof retryable === "boolean" ? { retryable } : {};
};

/** A provider's error as a FlotillaError; our own errors pass through. */
function modelError(err: unknown): unknown {
  if (isFlotillaError(err)) return err;
  if (APICallError.isInstance(err)) {
    return new FlotillaError(ErrorCodes.MODEL_ERROR, `model call failed${err.statusCode ? ` (HTTP ${err.statusCode})` : ""}: ${err.message}`, {
      cause: err,
      details: { statusCode: err.statusCode, url: err.url },
      // Unset when the provider may succeed next time: the code (MODEL_ERROR, retryable) decides.
      ...(!err.isRetryable && { retryable: false }),
    });
  }
  if (err instanceof Error) return new FlotillaError(ErrorCodes.MODEL_ERROR, `model call failed: ${err.message}`, { cause: err, ...thrownRetryable(err) });
  return new FlotillaError(ErrorCodes.MODEL_ERROR, `model call failed: ${String(err)}`, thrownRetryable(err));
}
