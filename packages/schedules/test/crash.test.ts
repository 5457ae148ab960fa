// @cluster: three scheduler processes, killed: ticks each fired once
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import { testRedisEnv, waitFor } from "@flotilla/testing";
import { afterEach, describe, expect, it } from "vitest";
import { template, useSchedules } from "./helpers.ts";

const fixture = fileURLToPath(new URL("./fixtures/scheduler-process.ts", import.meta.url));
const t = useSchedules("schedules-crash");
const children = new Map<string, ChildProcess>();
afterEach(() => {
  for (const c of children.values()) c.kill("SIGKILL");
  children.clear();
});

function startProcess(workerId: string): ChildProcess {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", fixture], {
    env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: t.prefix, FLOTILLA_WORKER_ID: workerId },
    stdio: ["ignore", "ignore", "inherit"],
  });
  children.set(workerId, child);
  return child;
}

/** Ends a process with `signal` and waits until it is gone. */
async function end(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, "exit");
  child.kill(signal);
  await exited;
}

describe("schedules across processes that die", () => {
  it("three processes fire an every-second schedule, one killed (kill -9) mid-round: each tick has one task, recorded once", async () => {
    for (const id of ["p1", "p2", "p3"]) startProcess(id);
    await waitFor(async () => (await t.redis.scard(`${t.prefix}:ready`)) === 3, { timeoutMs: 30_000, what: "three scheduler processes" });

    await t.schedules.create({ id: "crash", every: 1000, overlap: "allow" }, template());
    const { createdAt } = (await t.schedules.get("crash"))!;
    await t.redis.set(`${t.prefix}:hang-from`, createdAt + 4000);

    // One process has created a tick's task and hangs before recording it, holding the schedule's lease.
    const victim = await waitFor(() => t.redis.get(`${t.prefix}:hung`), { timeoutMs: 20_000, what: "a process to hang mid-round" });
    await end(children.get(victim)!, "SIGKILL");

    // The others take its ticks over once its lease lapses, and go on.
    const last = createdAt + 10_000;
    await waitFor(async () => ((await t.schedules.get("crash"))?.lastTickAt ?? 0) >= last, { timeoutMs: 40_000, what: "ticks up to 10 s" });
    const survivors = [...children].filter(([id]) => id !== victim).map(([, c]) => c);
    await Promise.all(survivors.map((c) => end(c, "SIGTERM")));

    const names = (await t.taskNames("sched")).filter((n) => n.startsWith("schedule:crash:"));
    const ticks = names.map((n) => Number(n.slice("schedule:crash:".length))).sort((a, b) => a - b);
    // Every tick of the first 10 s has its task, each once, and nothing between ticks.
    expect(ticks.filter((tick) => tick <= last)).toEqual(Array.from({ length: 10 }, (_, k) => createdAt + (k + 1) * 1000));
    expect(ticks).toEqual(Array.from({ length: ticks.length }, (_, k) => createdAt + (k + 1) * 1000));
    // Counted once each: the victim's unrecorded round was recorded by the process that took it over.
    const info = (await t.schedules.get("crash"))!;
    expect(info.fired).toBe(ticks.length);
    expect(info.skipped + info.missed).toBe(0);
    // More than one process fired, the victim among them.
    const tasks = await t.tasks.getMany(names.map((n) => `sched/${n}`));
    const firedBy = new Set(tasks.map((task) => task!.metadata.firedBy));
    expect(firedBy.size).toBeGreaterThan(1);
    expect(firedBy.has(victim)).toBe(true);
  }, 90_000);
});
