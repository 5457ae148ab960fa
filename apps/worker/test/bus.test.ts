// @cluster: bus subscriptions served by processes that are killed: consumer groups of several topics, each its own slot
import type { ChildProcess } from "node:child_process";
import { Bus } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnApp } from "./spawn-app.ts";

const prefix = testPrefix("app-bus");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const bus = new Bus({ redis: testConnection(), prefix });
let child: ChildProcess | undefined;

afterAll(async () => {
  child?.kill("SIGKILL");
  await client.close();
  await bus.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("flotilla-worker serving bus subscriptions", () => {
  it("a module's `bus` export: the app serves its subscriptions (in its heartbeat), a handler's and an agent's", async () => {
    child = spawnApp({ prefix, fixture: "bus-module.ts", workerId: "app-bus-1" });
    const worker = await waitFor(async () => (await client.fleet.status()).workers.find((w) => w.workerId === "app-bus-1"), { timeoutMs: 20_000 });
    expect(worker.subscriptions).toEqual(["app.numbers/squarer", "app.docs/summarizer"]);
    expect((await bus.request("app.numbers", 12, { timeoutMs: 20_000 })).payload).toEqual({ square: 144 });
    expect((await bus.request("app.docs", "the report", { timeoutMs: 20_000 })).payload).toMatchObject({ text: "summary of the report" });
  });
});
