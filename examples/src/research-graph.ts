// A research graph on the fleet: plan → one branch per subtopic → research (in parallel, on two
// workers) → unite → write. The planner's three subtopics fan out; the writer runs once, after
// every branch, with their notes in branch order. Offline with the scripted model; with a real
// provider when OPENAI_API_KEY or ANTHROPIC_API_KEY is set (or FLOTILLA_EXAMPLE_MODEL names any model).
//   pnpm --filter @flotilla/examples research-graph
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { defineNode, GraphBuilder, graphWorker, isNodeEvent } from "@flotilla/graph";
import { purgePrefix } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { z } from "zod";
import { exampleModel } from "./setup.ts";

const model = exampleModel();
const SUBTOPICS = [
  "How Redis streams and consumer groups hand work to workers",
  "What happens to a claimed entry when its worker crashes",
  "Retries, dead letters and idempotent consumers",
];

const planner = new Agent({
  name: "planner",
  model,
  instructions: 'Split the topic into exactly three subtopics, each a self-contained research question. Answer with JSON: {"subtopics": [three strings]}.',
  outputSchema: z.object({ subtopics: z.array(z.string()) }),
  options: { scripted: { reply: JSON.stringify({ subtopics: SUBTOPICS }) } },
});

const researcher = new Agent({
  name: "researcher",
  model,
  instructions: "You research one subtopic and answer with two or three sentences of notes.",
  // Offline: the subtopic (the branch's item, its input) comes back as notes.
  options: { scripted: { reply: "Notes on {input}: what it is, why it matters, and one thing to watch." } },
});

const writer = new Agent({
  name: "writer",
  model,
  instructions: "You write a short report on the topic from the research notes (a list, one per subtopic).",
  options: {
    scripted: {
      reply:
        "Durable work queues on Redis. A stream holds the work and a consumer group hands each entry to one worker. " +
        "An entry whose worker crashed stays pending and is claimed again once idle. " +
        "Retries with a cap and then a dead-letter stream keep a poison entry from looping; idempotent consumers make a redelivery harmless.",
    },
  },
});

// `plan` fans out, so its output must be the list itself: a node function runs the planner agent
// (in process, its events forwarded to the node's stream) and returns the subtopics.
const plan = defineNode({
  type: "plan",
  inputSchema: z.object({ topic: z.string() }),
  outputSchema: z.array(z.string()).min(1),
  async execute({ topic }, ctx) {
    // Through the worker's executor (in process here; a Temporal-mode worker would run it as a workflow),
    // its events on this node's stream.
    const answer = (await ctx.runAgent(planner, topic)) as { output: { subtopics: string[] } };
    return answer.output.subtopics.slice(0, 3);
  },
});

// The graph, typed: node ids are checked by the compiler, the whole graph by build().
const graph = new GraphBuilder("research")
  .node("plan", { type: "plan", fanOut: true })
  // No inputs: a node gets its predecessor's output, and inside a branch that is the branch's subtopic.
  .node("research", { type: "researcher", retry: { maxRetries: 2 } })
  .node("write", {
    type: "writer",
    unites: { id: "plan" },
    inputs: { topic: "${{input.topic}}", notes: "${{research.outputs.text}}" },
  })
  .edge("plan", "research")
  .edge("research", "write")
  .build();

// Two workers serving every node type, two tasks at a time each: the branches spread over them.
const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = `flotilla-example-${process.pid}`;
const workers = ["worker-a", "worker-b"].map(
  (workerId) => new Worker({ redis: url, prefix, workerId, concurrency: 2, graph: graphWorker({ nodes: [plan], agents: [researcher, writer] }) }),
);
await Promise.all(workers.map((w) => w.start()));
const client = new FlotillaClient({ redis: url, prefix });

const label = (node: string, branch: readonly number[]) => (branch.length ? `${node}[${branch.join(".")}]` : node);

try {
  // The builder's output is the graph's JSON: what a service in any language stores, versions or
  // POSTs to start the same run.
  console.log(`graph "${graph.name}" as JSON (model ${model}):`);
  console.log(JSON.stringify(graph));
  const run = await client.startGraph(graph, { topic: "Durable work queues on Redis" });
  console.log(`run ${run.runId}`);
  // Branches stream at once: each instance's text is printed a line at a time, tagged. A node's
  // node-finished comes after its own events.
  const text = new Map<string, string>();
  for await (const e of run.stream()) {
    if (isNodeEvent(e)) {
      // A node task's own event (text, tool calls, status…), tagged with its node, instance and branch.
      if (e.type === "text") {
        const lines = ((text.get(e.instance) ?? "") + e.delta).split("\n");
        text.set(e.instance, lines.pop()!);
        for (const l of lines) console.log(`  ${label(e.node, e.branch)} │ ${l}`);
      }
      if (e.type === "status" && e.status === "retrying") console.log(`↻ ${label(e.node, e.branch)} retrying`);
      continue;
    }
    // A lifecycle event of the run.
    const tag = e.node !== undefined ? label(e.node, e.branch ?? []) : "";
    if (e.type === "node-started") console.log(`▶ ${tag} started (attempt ${e.attempt})`);
    if (e.type === "node-finished") {
      const rest = text.get(e.instance ?? "");
      if (rest) console.log(`  ${tag} │ ${rest}`);
      console.log(`■ ${tag} ${e.status}`);
    }
    if (e.type === "run-finished") console.log(`[run ${String(e.status).toLowerCase()}]`);
  }
  const result = (await run.result()) as { write: { text: string } };
  console.log(`report: ${result.write.text}`);
  const status = await run.status();
  console.log(`status: ${status.status}`);
  for (const n of status.nodes) {
    // Which worker ran it is on the node's task (a skipped node has none).
    const task = await client
      .handle(n.taskId)
      .status()
      .catch(() => undefined);
    console.log(`  ${label(n.node, n.branch).padEnd(12)} ${n.status.padEnd(9)} on ${task?.workerId ?? "-"}`);
  }
} finally {
  await client.close();
  await Promise.all(workers.map((w) => w.stop()));
  const redis = new Redis(url);
  await purgePrefix(redis, prefix);
  redis.disconnect();
}
