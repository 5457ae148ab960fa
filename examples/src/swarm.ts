// A swarm on the fleet: a triage agent hands a request to the right specialist with the built-in
// handoff tool; the handoff shows in the task's events. Offline with the scripted model; with a
// real provider when OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
//   pnpm --filter @flotilla/examples swarm
import { Agent, Swarm } from "@flotilla/agent";
import { exampleModel, startFleet } from "./setup.ts";

const model = exampleModel();
const desk = new Swarm({
  name: "help-desk",
  agents: [
    new Agent({
      name: "triage",
      model,
      instructions: "Route the request: billing questions to billing, everything else to support. Use transfer_to_agent.",
      options: { scripted: { toolCalls: [{ name: "transfer_to_agent", args: { agent: "billing", reason: "a question about an invoice" } }] } },
    }),
    new Agent({
      name: "billing",
      model,
      instructions: "You answer billing questions in one or two sentences.",
      options: { scripted: { reply: "Your invoice is paid; the receipt is on its way." } },
    }),
    new Agent({
      name: "support",
      model,
      instructions: "You answer support questions in one or two sentences.",
      options: { scripted: { reply: "Try turning it off and on again." } },
    }),
  ],
});

const { client, done } = await startFleet({});
try {
  const handle = await client.submit(desk, "Was my last invoice paid?", { detailed: true });
  console.log(`task ${handle.taskId} (model ${model})`);
  for await (const e of handle.stream()) {
    if (e.type === "handoff") console.log(`handoff: ${e.from} → ${e.to}${e.reason ? ` (${e.reason})` : ""}`);
    if (e.type === "text") process.stdout.write(e.delta);
    if (e.type === "status") console.log(`\n[${e.status}]`);
  }
  const result = (await handle.result()) as { agent: string; text: string };
  console.log(`answered by ${result.agent}: ${result.text}`);
} finally {
  await done();
}
