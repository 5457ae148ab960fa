import type { LanguageModelV4Message, LanguageModelV4Prompt } from "@ai-sdk/provider";
import type { Message } from "@flotilla/core";

/** A conversation as the AI SDK's model interface takes it, after the agent's instructions. */
export function toPrompt(instructions: string, messages: readonly Message[]): LanguageModelV4Prompt {
  const prompt: LanguageModelV4Prompt = [];
  if (instructions) prompt.push({ role: "system", content: instructions });
  for (const m of messages) {
    const previous = prompt.at(-1);
    switch (m.role) {
      case "user":
        prompt.push({ role: "user", content: [{ type: "text", text: m.content }] });
        break;
      case "assistant":
        prompt.push({
          role: "assistant",
          content: [
            ...(m.content ? [{ type: "text" as const, text: m.content }] : []),
            ...(m.toolCalls ?? []).map((c) => ({ type: "tool-call" as const, toolCallId: c.toolCallId, toolName: c.name, input: c.args })),
          ],
        });
        break;
      case "tool": {
        const part = {
          type: "tool-result" as const,
          toolCallId: m.toolCallId,
          toolName: m.name,
          output: m.isError ? { type: "error-json" as const, value: m.content } : { type: "json" as const, value: m.content },
        };
        // Results of one turn's calls travel together.
        if (previous?.role === "tool") (previous as Extract<LanguageModelV4Message, { role: "tool" }>).content.push(part);
        else prompt.push({ role: "tool", content: [part] });
        break;
      }
    }
  }
  return prompt;
}
