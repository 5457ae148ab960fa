#!/usr/bin/env node
// `npm run dashboard`: the live dashboard on a fleet with something to watch. Starts a throwaway
// Redis if none answers, a worker process, the gateway serving the dashboard, and a trickle of
// work: agent runs (one streams slowly, one calls a tool, one fails into the dead letters), a graph
// run (a fan-out of three) and orders published to a topic two subscriptions follow (one refuses
// every fifth into its dead letters), so every page has something on it; prints the URL and opens
// it when it can. Ctrl-C (or SIGTERM) stops it all and removes its keys.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { Bus } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { createGateway } from "@flotilla/gateway";
import { purgePrefix, startRedisServer } from "@flotilla/testing";
import { Redis } from "ioredis";
import { answers } from "./redis-server.ts";
import { ORDERS_TOPIC, REPORT_GRAPH } from "./sample-work.ts";
import { stopChild, Teardown } from "./teardown.ts";
import { demoModule, spawnWorker } from "./worker-process.ts";

const dashboardDir = fileURLToPath(new URL("../../dashboard/dist", import.meta.url));
const port = Number(process.env.FLOTILLA_GATEWAY_PORT ?? 8080);
const say = (s = "") => process.stdout.write(`${s}\n`);
const teardown = new Teardown();

const agents = {
  writer: new Agent({
    name: "writer",
    model: "scripted:writer",
    options: {
      scripted: {
        reply: "Flotilla runs your agents on a fleet of workers over Redis, and every token you see here arrived live, as the worker produced it.",
        tokenDelayMs: 120,
      },
    },
  }),
  researcher: new Agent({
    name: "researcher",
    model: "scripted:researcher",
    tools: ["weather"],
    options: { scripted: { toolCalls: [{ name: "weather", args: { city: "Lisbon" } }], tokenDelayMs: 40 } },
  }),
  flaky: new Agent({ name: "flaky", model: "scripted:flaky", options: { scripted: { failWith: "the provider is down", failAfterTokens: 3 } } }),
};

/** Opens `url` in the desktop's browser when there is one; says nothing when there is not. */
function open(url: string): void {
  const opener = process.platform === "darwin" ? "open" : "xdg-open";
  const child = spawn(opener, [url], { stdio: "ignore", detached: true });
  child.on("error", () => {});
  child.unref();
}

async function main(): Promise<void> {
  if (!existsSync(dashboardDir)) throw new Error(`no dashboard build at ${dashboardDir}: run \`npm run dashboard\` (it builds first)`);
  let url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  if (!(await answers(url))) {
    say(`No Redis answers at ${url}; starting a throwaway redis-server…`);
    const server = await startRedisServer({ aof: false });
    url = server.url;
    teardown.add(() => server.stop());
  }
  const prefix = `flotilla-dashboard-${randomBytes(3).toString("hex")}`;
  const admin = new Redis(url);
  teardown.add(async () => {
    await purgePrefix(admin, prefix);
    admin.disconnect();
  });
  // It also serves the sample graph's node types and the topic's subscriptions.
  const { child, started } = spawnWorker(url, prefix, "dashboard-worker", { FLOTILLA_MODULE: demoModule("sample-fleet") });
  teardown.add(() => stopChild(child, 10_000));
  await started;
  const gateway = createGateway({ redis: url, prefix, port, dashboardDir });
  teardown.add(() => gateway.close());
  const address = await gateway.start();
  const client = new FlotillaClient({ redis: url, prefix });
  teardown.add(() => client.close());
  const bus = new Bus({ redis: url, prefix, source: "sample-shop" });
  teardown.add(() => bus.close());

  say(`Flotilla dashboard: ${address.url}/  (redis ${url}, prefix ${prefix}; Ctrl-C stops it and removes its keys)`);
  if (!process.env.CI) open(`${address.url}/`);
  // Something to watch: a slow writer every 8 s, a tool call every 5 s, a failure every 20 s.
  const every = (ms: number, submit: () => Promise<unknown>) => {
    void submit().catch(() => {});
    const timer = setInterval(() => void submit().catch(() => {}), ms);
    teardown.add(async () => clearInterval(timer));
  };
  every(8_000, () => client.submit(agents.writer, "Tell me about Flotilla", { detailed: true }));
  every(5_000, () => client.submit(agents.researcher, "Weather in Lisbon?", { detailed: true }));
  every(20_000, () => client.submit(agents.flaky, "Try this"));
  // A graph run every 30 s, an order every 4 s.
  every(30_000, () => client.startGraph(REPORT_GRAPH, { topic: "Flotilla" }));
  let order = 0;
  every(4_000, () => bus.publish(ORDERS_TOPIC, { order: ++order, total: 10 + ((order * 7) % 90) }, { correlationId: `order-${order}` }));
  await new Promise<never>(() => {});
}

let interrupted = false;
function interrupt(signal: NodeJS.Signals): void {
  if (interrupted) return;
  interrupted = true;
  say(`\n${signal}: stopping the worker and the gateway, removing the keys…`);
  void teardown.run().finally(() => process.exit(0));
}
process.on("SIGINT", interrupt);
process.on("SIGTERM", interrupt);

main().catch(async (err: unknown) => {
  process.stderr.write(`flotilla dashboard: ${(err as Error)?.message ?? String(err)}\n`);
  await teardown.run();
  process.exit(1);
});
