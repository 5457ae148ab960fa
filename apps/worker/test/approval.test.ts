// @cluster: a task that waits for approval survives its worker's kill and resumes on another process
import type { ChildProcess } from "node:child_process";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnApp } from "./spawn-app.ts";

// Human in the loop across processes: two flotilla-worker processes; the task waits for approval on
// one, that one is stopped, and the approval, sent from this process, resumes it on the other.
const prefix = testPrefix("app-approval");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const exited = (child: ChildProcess) => new Promise((resolve) => (child.exitCode !== null ? resolve(child.exitCode) : child.once("exit", resolve)));

describe("flotilla-worker: approval", () => {
  it("a task waits for approval without holding its worker; approved from another process, it resumes on another worker, its tool run once", async () => {
    const first = spawnApp({ prefix, fixture: "approval-module.ts", workerId: "app-approval-1", env: { FLOTILLA_CONCURRENCY: "1" } });
    children.push(first);
    await waitFor(async () => (await client.fleet.status()).workers.some((w) => w.workerId === "app-approval-1"), { timeoutMs: 20_000 });
    const agent = new Agent({
      name: "notifier",
      model: "scripted:x",
      tools: ["send"],
      options: { scripted: { toolCalls: [{ name: "send", args: { to: "ops" } }] } },
    });
    const handle = await client.submit(agent, "tell ops");
    const waiting = await waitFor(async () => {
      const record = await handle.status();
      return record.status === "WAITING" ? record : undefined;
    });
    expect(waiting).toMatchObject({ workerId: "app-approval-1", waiting: { name: "approval", tool: "send", args: { to: "ops" } } });
    // Its one slot is free: another task runs to the end on it meanwhile.
    const other = await client.submit(new Agent({ name: "echo", model: "scripted:echo" }), "meanwhile");
    expect((await other.result({ timeoutMs: 20_000 })).text).toBe("Echo: meanwhile");

    first.kill("SIGTERM");
    await exited(first);
    const second = spawnApp({ prefix, fixture: "approval-module.ts", workerId: "app-approval-2" });
    children.push(second);
    await waitFor(async () => (await client.fleet.status()).workers.some((w) => w.workerId === "app-approval-2"), { timeoutMs: 20_000 });
    await handle.approve("go ahead");
    expect((await handle.result({ timeoutMs: 20_000 })).text).toBe("send returned sent to ops. Echo: tell ops");
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", workerId: "app-approval-2" });
    expect(await redis.lrange(`${prefix}:test:sent`, 0, -1)).toEqual(["ops from app-approval-2"]);
  });
});
