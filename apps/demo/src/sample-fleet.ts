// What the worker of `npm run dashboard` serves beyond the demo's tools (it is its --module): the node
// types of a small graph, and two subscriptions of a topic, so the dashboard's Graph runs and Topics
// pages have something to show a newcomer.
import { Agent } from "@flotilla/agent";
import { busWorker, subscribe } from "@flotilla/bus";
import { defineNode, graphWorker } from "@flotilla/graph";
import { z } from "zod";
import { ORDERS_TOPIC } from "./sample-work.ts";

export { tools } from "./tools.ts";

const outline = defineNode({
  type: "outline",
  inputSchema: z.object({ topic: z.string() }),
  outputSchema: z.array(z.string()).min(1),
  execute: ({ topic }) => [`What ${topic} is`, `Why ${topic} matters`, `How to start with ${topic}`],
});
const sectionWriter = new Agent({
  name: "section-writer",
  model: "scripted:section-writer",
  options: { scripted: { reply: "A paragraph on {input}: what to know, and one example.", tokenDelayMs: 80 } },
});
const editor = new Agent({
  name: "editor",
  model: "scripted:editor",
  options: { scripted: { reply: "The three sections, edited into one short report.", tokenDelayMs: 40 } },
});
export const graph = graphWorker({ nodes: [outline], agents: [sectionWriter, editor] });

const mailer = new Agent({ name: "mailer", model: "scripted:mailer", options: { scripted: { reply: "Sent the confirmation of {input}." } } });
export const bus = busWorker({
  subscriptions: [
    // Each order becomes an agent task of its own (its page links from the topic's).
    subscribe(ORDERS_TOPIC, mailer, { name: "mailer" }),
    // A plain handler that refuses every fifth order: its dead letters show on the subscription's page.
    subscribe(
      ORDERS_TOPIC,
      (event) => {
        const { order } = event.payload as { order: number };
        if (order % 5 === 0) throw new Error(`order ${order}: no address on file`);
        return null;
      },
      { name: "audit", maxRetries: 1, backoff: { delayMs: 500 } },
    ),
  ],
});
