import { ErrorCodes, FlotillaError, type JsonValue } from "@flotilla/core";
import { z } from "zod";
import type { Message, ModelChunk, ModelProvider, ModelRequest } from "./provider.ts";

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

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

function tokenize(text: string, chunkSize: number): string[] {
  if (chunkSize > 0) {
    const out: string[] = [];
    for (let i = 0; i < text.length; i += chunkSize) out.push(text.slice(i, i + chunkSize));
    return out;
  }
  return text.match(/\s*\S+/g) ?? [];
}

const words = (s: string) => (s.match(/\S+/g) ?? []).length;
const asText = (v: JsonValue) => (typeof v === "string" ? v : JSON.stringify(v));

/**
 * A deterministic model with no network: streams its reply token by token, calls tools on cue,
 * fails or goes slow when told to. Used by the demo and the tests; configured per agent through
 * `options.scripted` (see ScriptSchema).
 */
export function scriptedProvider(): ModelProvider {
  return {
    name: "scripted",
    async *stream(request: ModelRequest): AsyncGenerator<ModelChunk> {
      const parsed = ScriptSchema.safeParse(request.options.scripted ?? {});
      if (!parsed.success) {
        throw new FlotillaError(ErrorCodes.VALIDATION, `invalid options.scripted: ${parsed.error.issues[0]?.message}`);
      }
      const script = parsed.data;
      const messages = request.messages;
      const input = messages.find((m): m is Extract<Message, { role: "user" }> => m.role === "user")?.content ?? "";
      const toolResults = messages.filter((m): m is Extract<Message, { role: "tool" }> => m.role === "tool");
      const inputTokens = messages.reduce((n, m) => n + words("content" in m ? asText(m.content) : ""), words(request.instructions));

      if (script.toolCalls?.length && toolResults.length === 0) {
        let i = 0;
        for (const call of script.toolCalls) {
          yield { type: "tool_call", toolCallId: `call_${++i}`, name: call.name, args: call.args };
        }
        yield { type: "usage", usage: { inputTokens, outputTokens: script.toolCalls.length, totalTokens: inputTokens + script.toolCalls.length } };
        yield { type: "finish", reason: "tool_calls" };
        return;
      }

      const toolSummary = toolResults.map((r) => `${r.name} returned ${asText(r.content)}.`).join(" ");
      const template = script.reply ?? (toolSummary ? `${toolSummary} Echo: {input}` : "Echo: {input}");
      const tokens = tokenize(template.replaceAll("{input}", input), script.chunkSize ?? 0);
      let emitted = 0;
      for (const token of tokens) {
        if (script.failWith !== undefined && emitted >= (script.failAfterTokens ?? 0)) break;
        if (script.tokenDelayMs) await sleep(script.tokenDelayMs, request.signal);
        else if (request.signal.aborted) throw request.signal.reason;
        yield { type: "text", delta: token };
        emitted++;
      }
      if (script.failWith !== undefined) throw new FlotillaError(ErrorCodes.AGENT_ERROR, script.failWith);
      yield { type: "usage", usage: { inputTokens, outputTokens: emitted, totalTokens: inputTokens + emitted } };
      yield { type: "finish", reason: "stop" };
    },
  };
}
