// A research agent with two tools, run on the fleet: it searches a small library, counts words,
// and answers with a structured report. Offline with the scripted model; with a real provider when
// OPENAI_API_KEY or ANTHROPIC_API_KEY is set (or FLOTILLA_EXAMPLE_MODEL names any model).
//   pnpm --filter @flotilla/examples research
import { Agent, defineTool } from "@flotilla/agent";
import { z } from "zod";
import { exampleModel, startFleet } from "./setup.ts";

const LIBRARY: Record<string, string> = {
  redis: "Redis is an in-memory data store; its streams and consumer groups make durable work queues.",
  temporal: "Temporal runs durable workflows that resume after a crash from their last completed step.",
  fleet: "A fleet is a group of ships, or of worker processes, that sail under one command.",
};

const search = defineTool({
  name: "search",
  description: "Searches the library for a topic and returns what it says",
  inputSchema: z.object({ topic: z.string() }),
  execute: ({ topic }) => ({ topic, text: LIBRARY[topic.toLowerCase()] ?? "nothing found" }),
});

const wordCount = defineTool({
  name: "word_count",
  description: "Counts the words of a text",
  inputSchema: z.object({ text: z.string() }),
  execute: ({ text }) => ({ words: text.split(/\s+/).filter(Boolean).length }),
});

const researcher = new Agent({
  name: "researcher",
  model: exampleModel(),
  instructions:
    'You research a topic with the search tool, count the words of what you found with word_count, and answer with JSON: {"topic", "summary", "words"}.',
  tools: ["search", "word_count"],
  outputSchema: z.object({ topic: z.string(), summary: z.string(), words: z.number() }),
  options: {
    maxSteps: 6,
    // What the offline model does: call both tools, then answer.
    scripted: {
      toolCalls: [
        { name: "search", args: { topic: "redis" } },
        { name: "word_count", args: { text: LIBRARY.redis! } },
      ],
      reply: JSON.stringify({ topic: "redis", summary: "An in-memory store whose streams make durable queues.", words: 15 }),
    },
  },
});

const { client, done } = await startFleet({ search, word_count: wordCount });
try {
  const handle = await client.submit(researcher, "Research Redis for me.", { detailed: true });
  console.log(`task ${handle.taskId} (model ${researcher.model})`);
  for await (const e of handle.stream()) {
    if (e.type === "tool_call") console.log(`→ ${e.name}(${JSON.stringify(e.args)})`);
    if (e.type === "tool_result") console.log(`← ${e.name}: ${JSON.stringify(e.result)}`);
    if (e.type === "text") process.stdout.write(e.delta);
    if (e.type === "status") console.log(`\n[${e.status}]`);
  }
  const result = (await handle.result()) as { output: unknown; usage: unknown };
  console.log("report:", JSON.stringify(result.output));
  console.log("usage:", JSON.stringify(result.usage));
} finally {
  await done();
}
