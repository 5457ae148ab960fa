import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Bus } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const module = fileURLToPath(new URL("./fixtures/bus-module.ts", import.meta.url));
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
    child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
      env: {
        ...process.env,
        ...testRedisEnv(),
        FLOTILLA_PREFIX: prefix,
        FLOTILLA_MODULE: module,
        FLOTILLA_WORKER_ID: "app-bus-1",
        FLOTILLA_LOG_LEVEL: "error",
      },
      stdio: "ignore",
    });
    const worker = await waitFor(async () => (await client.fleet.status()).workers.find((w) => w.workerId === "app-bus-1"), { timeoutMs: 20_000 });
    expect(worker.subscriptions).toEqual(["app.numbers/squarer", "app.docs/summarizer"]);
    expect((await bus.request("app.numbers", 12, { timeoutMs: 20_000 })).payload).toEqual({ square: 144 });
    expect((await bus.request("app.docs", "the report", { timeoutMs: 20_000 })).payload).toMatchObject({ text: "summary of the report" });
  });
});
