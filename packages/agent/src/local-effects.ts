// The tool loop's effects in process: direct model and tool calls, each in its OpenTelemetry span
// (a child of whatever span is active: the worker's flotilla.execute), events yielded as they
// happen, and every message handed to `onMessage` as it joins the conversation.
import type { Message } from "@flotilla/core";
import { context, type Exception, type Span, SpanStatusCode, trace } from "@opentelemetry/api";
import type { LoopEffects } from "./loop.ts";
import type { LanguageModel, ModelResolver } from "./model.ts";
import { toolMessage } from "./steps.ts";
import { resolveTools, runToolCall, type ToolRegistry, toolDefinitions } from "./tool.ts";
import { modelTurn, type TurnResult } from "./turn.ts";

export interface LocalEffectsOptions {
  signal: AbortSignal;
  resolver: ModelResolver;
  model?: LanguageModel | undefined;
  tools?: ToolRegistry | undefined;
  taskId: string;
  attempt: number;
  onMessage?: ((message: Message) => void | Promise<void>) | undefined;
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
          try {
            turn = yield* modelTurn({ model, agent, messages, tools: definitions, signal });
            span.setAttributes({ "gen_ai.usage.input_tokens": turn.usage.inputTokens, "gen_ai.usage.output_tokens": turn.usage.outputTokens });
            endSpan(span);
          } catch (err) {
            endSpan(span, asException(err));
            throw err;
          }
          yield { type: "step", index: step, finishReason: turn.finishReason, usage: turn.usage };
          return turn;
        },
        async toolCall(call, _turn, emit) {
          const tool = tools.find((t) => t.name === call.name);
          const span = tracer().startSpan("flotilla.tool", { attributes: { "flotilla.tool": call.name, "flotilla.tool_call_id": call.toolCallId } });
          try {
            const out = await context.with(trace.setSpan(context.active(), span), () =>
              runToolCall(tool, call, { signal, taskId: options.taskId, attempt: options.attempt, onProgress: emit }),
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
  };
}
