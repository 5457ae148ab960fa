// @cluster: graph node processes killed at random: a run's nodes span slots
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createKeys } from "@flotilla/core";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { GraphClient } from "../src/index.ts";

const fixture = fileURLToPath(new URL("./fixtures/graph-worker-process.ts", import.meta.url));
const WIDTH = 200;
const prefix = testPrefix("graph-chaos");
const redis = testRedis();
const client = new GraphClient({ redis: testConnection(), prefix });
const live = new Set<ChildProcess>();
let started = 0;

function startWorker(): ChildProcess {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", fixture], {
    env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, FLOTILLA_WORKER_ID: `graph-chaos-${++started}` },
    stdio: "ignore",
  });
  live.add(child);
  child.on("exit", () => live.delete(child));
  return child;
}

afterAll(async () => {
  for (const c of live) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("graph chaos", () => {
  it(`a ${WIDTH}-branch fan-out completes while a worker is killed (kill -9) every second: one outcome per node, the merge created once`, async () => {
    for (let i = 0; i < 3; i++) startWorker();
    const run = await client.startGraph(
      {
        name: "chaos",
        nodes: [
          { id: "split", type: "chaos-split", fanOut: true, next: ["work"] },
          {
            id: "work",
            type: "chaos-work",
            next: ["merge"], // Killed every second, one node task can lose several workers in a row: the default
            // delivery limit (maxRetries + 3) can run out, and the run would fail as it should.
            retry: { maxRetries: 2, backoff: { delayMs: 20 }, maxDeliveries: 30 },
          },
          { id: "merge", type: "chaos-merge", unites: { id: "split" }, inputs: { ks: "${{work.outputs.k}}" } },
        ],
      },
      { width: WIDTH },
    );
    let kills = 0;
    const killer = setInterval(() => {
      const victims = [...live];
      const victim = victims[Math.floor(Math.random() * victims.length)];
      if (victim) {
        victim.kill("SIGKILL");
        kills++;
      }
      startWorker();
    }, 1000);
    try {
      const result = await run.result({ timeoutMs: 120_000 });
      expect(result).toEqual({ merge: { ks: Array.from({ length: WIDTH }, (_, k) => k), count: WIDTH } });
    } finally {
      clearInterval(killer);
    }
    expect(kills).toBeGreaterThanOrEqual(3);
    const status = await run.status();
    const byNode = (node: string) => status.nodes.filter((n) => n.node === node);
    expect(byNode("merge")).toHaveLength(1);
    expect(byNode("work")).toHaveLength(WIDTH);
    expect(status.nodes.every((n) => n.status === "EXECUTED")).toBe(true);
    // One recorded outcome per node task: each COMPLETED once (a task is never created twice: its name is the instance).
    const tasks = await client.engine.tasks.getMany(status.nodes.map((n) => n.taskId));
    expect(tasks.every((t) => t?.status === "COMPLETED")).toBe(true);
    // Nothing is left to hand off once the sweepers have run.
    await waitFor(async () => (await redis.zcard(createKeys(prefix).handoff("node.chaos-work"))) === 0, { timeoutMs: 10_000 });
    console.log(`graph chaos: ${kills} kills, ${started} workers started, run took ${(status.endedAt ?? 0) - status.createdAt} ms`);
  }, 180_000);
});
