// @cluster: graph runs across processes, one killed: a run's nodes are tasks of several queues and slots
import type { ChildProcess } from "node:child_process";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnApp } from "./spawn-app.ts";

const prefix = testPrefix("app-graph");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
let child: ChildProcess | undefined;

afterAll(async () => {
  child?.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("flotilla-worker serving graph node types", () => {
  it("a module's `graph` export: the app serves its node types (in its heartbeat) and runs a graph of a node function and an agent", async () => {
    child = spawnApp({ prefix, fixture: "graph-module.ts", workerId: "app-graph-1" });
    const worker = await waitFor(async () => (await client.fleet.status()).workers.find((w) => w.workerId === "app-graph-1"), { timeoutMs: 20_000 });
    expect(worker.nodeTypes).toEqual(["app-shout", "app-echo"]);
    expect(worker.queues).toEqual(expect.arrayContaining(["default", "node.app-shout", "node.app-echo"]));
    const run = await client.startGraph(
      {
        nodes: [
          { id: "loud", type: "app-shout", next: ["reply"] },
          { id: "reply", type: "app-echo", inputs: "${{loud.outputs}}" },
        ],
      },
      "ahoy",
    );
    expect(await run.result({ timeoutMs: 20_000 })).toEqual({ reply: { text: "heard AHOY" } });
  });
});
