// @single: takeovers through one Redis under a backlog; chaos.test.ts runs worker kills through a cluster's slots
// @serial: bounds each takeover's time (lease + a scan + 2 s): other files' load stretched it past the bound (and lapsed leases) once
// A backlog, and workers killed (kill -9) while it drains: a killed worker's tasks start again within
// the bound the worker README promises — their holder's lease, one reclaim scan (at most 0.625 of the
// scanner's lease), and a slot freeing on the scanning worker — not once the backlog has drained.
import type { ChildProcess } from "node:child_process";
import { Agent } from "@flotilla/agent";
import { FlotillaClient, type FlotillaEvent, type TaskHandle } from "@flotilla/client";
import { createKeys } from "@flotilla/core";
import { purgePrefix, sized, testConnection, testPrefix, testRedis } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnApp } from "./spawn-app.ts";

// Enough that the backlog outlasts the bound several times over (checked below), so a takeover that
// waited behind it would break the bound.
const TASKS = sized({ ci: 900, long: 2000 });
const KILLS = sized({ ci: 5, long: 12 });
const WORKERS = 3;
const CONCURRENCY = 5;
const LEASE_MS = 2000;
/** A task's run: four tokens 50 ms apart, and a tool call. */
const TASK_MS = 300;
/** The promise (worker README, "Takeover after a crash"), with 2 s for a loaded 2-core machine. */
const BOUND_MS = LEASE_MS + 0.625 * LEASE_MS + TASK_MS + 2000;

const prefix = testPrefix("takeover");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const live = new Set<ChildProcess>();
const workerIds = new Map<ChildProcess, string>();
const killedAt = new Map<string, number>();
let started = 0;

function startWorker(): void {
  const id = `takeover-${++started}`;
  const child = spawnApp({
    prefix,
    fixture: "chaos-module.ts",
    workerId: id,
    env: { FLOTILLA_CONCURRENCY: String(CONCURRENCY), FLOTILLA_LEASE_MS: String(LEASE_MS) },
  });
  live.add(child);
  workerIds.set(child, id);
  child.on("exit", () => live.delete(child));
}

afterAll(async () => {
  for (const c of live) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

describe("takeover under a backlog", () => {
  it(`${TASKS} tasks, ${KILLS} workers killed while they drain: each killed task starts again within the bound, not behind the backlog`, async () => {
    const agent = new Agent({
      name: "steady",
      model: "scripted:x",
      tools: ["count"],
      options: { scripted: { toolCalls: [{ name: "count", args: {} }], reply: "one two three four", tokenDelayMs: 50 } as never },
    });
    const handles: TaskHandle[] = [];
    for (let i = 0; i < TASKS; i += 100) {
      handles.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(100, TASKS - i) }, (_, j) => client.submit(agent, `task ${i + j}`, { detailed: true, maxDeliveries: 10 })),
        )),
      );
    }
    const beganAt = Date.now();
    for (let i = 0; i < WORKERS; i++) startWorker();
    let done = false;
    const all = Promise.allSettled(handles.map((h) => h.result({ timeoutMs: 180_000 }))).finally(() => {
      done = true;
    });
    const lane = createKeys(prefix).queue("default");
    /** A live worker that holds tasks now (its consumer's pending entries), to be killed mid-run. */
    const busyWorker = async (): Promise<ChildProcess | undefined> => {
      const [, , , consumers] = (await redis.xpending(lane, "flotilla")) as [number, unknown, unknown, Array<[string, string]> | null];
      const busy = new Set((consumers ?? []).filter(([, n]) => Number(n) > 0).map(([id]) => id));
      const victims = [...live].filter((c) => busy.has(workerIds.get(c)!) && !killedAt.has(workerIds.get(c)!));
      return victims[Math.floor(Math.random() * victims.length)];
    };
    for (let k = 0; k < KILLS && !done; ) {
      await new Promise((r) => setTimeout(r, 1500));
      const victim = await busyWorker();
      if (!victim) continue;
      k++;
      const exited = new Promise((r) => victim.once("exit", r));
      victim.kill("SIGKILL");
      await exited;
      killedAt.set(workerIds.get(victim)!, Date.now());
      startWorker();
    }
    const settled = await all;
    const drainedMs = Date.now() - beganAt;
    expect(settled.filter((s) => s.status === "rejected")).toEqual([]);

    const takeovers: Array<{ taskId: string; ms: number }> = [];
    for (const handle of handles) {
      for await (const e of handle.stream()) {
        if (e.type !== "status" || e.status !== "running" || !e.takenOverFrom) continue;
        const diedAt = killedAt.get(e.takenOverFrom);
        if (diedAt !== undefined) takeovers.push({ taskId: handle.taskId, ms: Math.max(0, (e as FlotillaEvent).ts - diedAt) });
      }
    }
    takeovers.sort((a, b) => a.ms - b.ms);
    console.log(
      JSON.stringify({ takeover: { tasks: TASKS, kills: killedAt.size, drainedMs, count: takeovers.length, max: takeovers.at(-1), boundMs: BOUND_MS } }),
    );
    // The backlog outlasted the bound: a takeover that waited behind it would have broken it.
    expect(drainedMs).toBeGreaterThan(2 * BOUND_MS);
    expect(takeovers.length).toBeGreaterThan(0);
    expect(takeovers.filter((t) => t.ms >= BOUND_MS)).toEqual([]);
    for (const c of live) c.kill("SIGTERM");
  }, 240_000);
});
