import type { LanguageModelV4, LanguageModelV4CallOptions, LanguageModelV4StreamPart } from "@ai-sdk/provider";
import { ErrorCodes, FlotillaError, type JsonValue, ValidationError } from "@flotilla/core";
import { z } from "zod";

/** What `agent.options.scripted` may say; every field optional. */
export const ScriptSchema = z
  .object({
    /** The reply, streamed token by token. `{input}` is replaced by the user's input. @default "Echo: {input}" */
    reply: z.string().optional(),
    /** Characters per token; 0 splits on words. @default 0 */
    chunkSize: z.number().int().min(0).optional(),
    /** Pause before each token (abortable), to act as a slow model. @default 0 */
    tokenDelayMs: z.number().min(0).optional(),
    /** Tools to call on the first turn; the reply follows once their results are in. */
    toolCalls: z.array(z.object({ name: z.string(), args: z.json() })).optional(),
    /** Fail with this message (after `failAfterTokens` tokens). */
    failWith: z.string().optional(),
    /** @default 0 */
    failAfterTokens: z.number().int().min(0).optional(),
  })
  .strict();
export type Script = z.infer<typeof ScriptSchema>;

function tokenize(text: string, chunkSize: number): string[] {
  if (chunkSize > 0) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += chunkSize) out.push(text.slice(i, i + chunkSize));
    return out;
  }
  return text.match(/\s*\S+/g) ?? [];
}

const words = (s: string) => (s.match(/\S+/g) ?? []).length;
const asText = (v: unknown) => (typeof v === "string" ? v : JSON.stringify(v));

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

/**
 * A deterministic model with no network, on the AI SDK's model interface like any other: streams
 * its reply token by token, calls tools on cue, fails or goes slow when told to. Configured per
 * agent through `options.scripted` (see ScriptSchema), which reaches it as provider options.
 * Used by the demo, the examples and the tests.
 */
export function scriptedModel(modelId = "scripted"): LanguageModelV4 {
  const model: LanguageModelV4 = {
    specificationVersion: "v4",
    provider: "scripted",
    modelId,
    supportedUrls: {},
    async doGenerate(options) {
      const { stream } = await model.doStream(options);
      const content: Array<{ type: "text"; text: string } | { type: "tool-call"; toolCallId: string; toolName: string; input: string }> = [];
      let text = "";
      let finish: Extract<LanguageModelV4StreamPart, { type: "finish" }> | undefined;
      for await (const part of stream) {
        if (part.type === "text-delta") text += part.delta;
        else if (part.type === "tool-call") content.push(part);
        else if (part.type === "finish") finish = part;
        else if (part.type === "error") throw part.error;
      }
      if (text) content.unshift({ type: "text", text });
      return { content, finishReason: finish!.finishReason, usage: finish!.usage, warnings: [] };
    },
    async doStream(options: LanguageModelV4CallOptions) {
      const parsed = ScriptSchema.safeParse(options.providerOptions?.scripted ?? {});
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw ValidationError.of("agent", ["options", "scripted", ...(issue?.path ?? [])].join("."), issue?.message ?? "invalid");
      }
      return { stream: ReadableStream.from(script(parsed.data, options)) };
    },
  };
  return model;
}

async function* script(s: Script, options: LanguageModelV4CallOptions): AsyncGenerator<LanguageModelV4StreamPart> {
  const signal = options.abortSignal;
  const prompt = options.prompt;
  // The turn answers the last user message; tool results after it are this turn's to use.
  let lastUser = -1;
  for (let i = 0; i < prompt.length; i++) if (prompt[i]!.role === "user") lastUser = i;
  const userMessage = prompt[lastUser];
  const input = userMessage?.role === "user" ? userMessage.content.map((p) => (p.type === "text" ? p.text : "")).join("") : "";
  const toolResults = prompt
    .slice(lastUser + 1)
    .flatMap((m) => (m.role === "tool" ? m.content : []))
    .flatMap((p) => (p.type === "tool-result" ? [p] : []));
  const inputTokens = prompt.reduce(
    (n, m) => n + words(typeof m.content === "string" ? m.content : m.content.map((p) => ("text" in p ? String(p.text) : "")).join(" ")),
    0,
  );
  yield { type: "stream-start", warnings: [] };

  // "First turn": none of its own tools has answered since the last user message (a swarm's
  // earlier agents may have called others).
  const own = new Set(s.toolCalls?.map((c) => c.name));
  if (s.toolCalls?.length && !toolResults.some((r) => own.has(r.toolName))) {
    let i = 0;
    for (const call of s.toolCalls) {
      yield { type: "tool-call", toolCallId: `call_${++i}`, toolName: call.name, input: JSON.stringify(call.args) };
    }
    yield { type: "finish", usage: usage(inputTokens, s.toolCalls.length), finishReason: { unified: "tool-calls", raw: "tool_calls" } };
    return;
  }

  const summary = toolResults.map((r) => `${r.toolName} returned ${asText(outputValue(r.output))}.`).join(" ");
  const template = s.reply ?? (summary ? `${summary} Echo: {input}` : "Echo: {input}");
  const tokens = tokenize(template.replaceAll("{input}", input), s.chunkSize ?? 0);
  let emitted = 0;
  // One abort listener for the whole reply, not one per token (each costs an EventTarget add and remove).
  const pause = s.tokenDelayMs ? pauses(signal) : undefined;
  yield { type: "text-start", id: "t0" };
  try {
    for (const token of tokens) {
      if (s.failWith !== undefined && emitted >= (s.failAfterTokens ?? 0)) break;
      if (pause) await pause.sleep(s.tokenDelayMs!);
      else if (signal?.aborted) throw signal.reason;
      yield { type: "text-delta", id: "t0", delta: token };
      emitted++;
    }
  } finally {
    pause?.done();
  }
  if (s.failWith !== undefined) {
    yield { type: "error", error: new FlotillaError(ErrorCodes.AGENT_ERROR, s.failWith) };
    return;
  }
  yield { type: "text-end", id: "t0" };
  yield { type: "finish", usage: usage(inputTokens, emitted), finishReason: { unified: "stop", raw: "stop" } };
}

/** Sleeps that end early, with the signal's reason, when it aborts; one listener for them all. */
function pauses(signal: AbortSignal | undefined): { sleep(ms: number): Promise<void>; done(): void } {
  let pending: { timer: NodeJS.Timeout; reject: (reason: unknown) => void } | undefined;
  const onAbort = () => {
    if (!pending) return;
    clearTimeout(pending.timer);
    pending.reject(signal!.reason);
    pending = undefined;
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  return {
    sleep(ms) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      return new Promise<void>((resolve, reject) => {
        pending = {
          timer: setTimeout(() => {
            pending = undefined;
            resolve();
          }, ms),
          reject,
        };
      });
    },
    done() {
      signal?.removeEventListener("abort", onAbort);
    },
  };
}

function outputValue(output: { type: string; value?: unknown }): JsonValue {
  return (output.value ?? null) as JsonValue;
}
