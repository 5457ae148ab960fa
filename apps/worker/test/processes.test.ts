// @cluster: worker processes killed and restarted; spawned processes find the cluster from REDIS_CLUSTER_NODES
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const tools = fileURLToPath(new URL("./fixtures/count-tools.ts", import.meta.url));
const prefix = testPrefix("procs");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const children: ChildProcess[] = [];

interface Proc {
  child: ChildProcess;
  workerId: string;
  exited: Promise<number | null>;
  logs: string[];
}

/** Starts a real flotilla-worker process, from source, and resolves once it is ready. */
async function startWorker(workerId: string, extraEnv: Record<string, string> = {}): Promise<Proc> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: {
      ...process.env,
      ...testRedisEnv(),
      FLOTILLA_PREFIX: prefix,
      FLOTILLA_MODULE: tools,
      FLOTILLA_CONCURRENCY: "4",
      FLOTILLA_WORKER_ID: workerId,
      FLOTILLA_HEARTBEAT_TTL_MS: "1500",
      ...extraEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const logs: string[] = [];
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      logs.push(...d.toString().split("\n").filter(Boolean));
      if (logs.some((l) => l.includes('"msg":"ready"'))) resolve();
    });
    child.stderr!.on("data", (d: Buffer) => logs.push(d.toString()));
    void exited.then((code) => reject(new Error(`worker exited (${code}) before ready:\n${logs.join("\n")}`)));
  });
  await ready;
  return { child, workerId, exited, logs };
}

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const counter = new Agent({
  name: "counter",
  model: "scripted:count",
  tools: ["count"],
  options: { scripted: { toolCalls: [{ name: "count", args: { sleepMs: 15 } }], reply: "counted" } },
});

describe("flotilla-worker processes", () => {
  it("two processes share one queue and run each task exactly once", async () => {
    const [a, b] = await Promise.all([startWorker("proc-a"), startWorker("proc-b")]);
    const handles = await Promise.all(Array.from({ length: 60 }, (_, i) => client.submit(counter, `task ${i}`)));
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 30_000 })));
    expect(results.every((r) => (r as { text: string }).text === "counted")).toBe(true);

    const runs = await redis.hgetall(`${prefix}:test:runs`);
    for (const h of handles) expect(runs[`${h.taskId}:1`], h.taskId).toBe("1");
    expect(Object.keys(runs)).toHaveLength(60);
    const byWorker = new Map<string, number>();
    for (const h of handles) {
      const { workerId } = await h.status();
      byWorker.set(workerId!, (byWorker.get(workerId!) ?? 0) + 1);
    }
    expect([...byWorker.keys()].sort()).toEqual(["proc-a", "proc-b"]);

    // kill -9 one: the fleet marks it dead once its beats stop; the other stays live.
    a.child.kill("SIGKILL");
    await a.exited;
    // proc-b's figures are as of its last beat: wait for a beat after its last task, on a loaded machine too.
    const fleet = await waitFor(
      async () => {
        const f = await client.fleet.status({ deadAfterMs: 700 });
        const dead = f.workers.find((w) => w.workerId === "proc-a")?.alive === false;
        return dead && f.workers.find((w) => w.workerId === "proc-b")?.completed === byWorker.get("proc-b") ? f : undefined;
      },
      { what: "proc-a marked dead, proc-b's last beat counting all it ran" },
    );
    expect(fleet.workers.find((w) => w.workerId === "proc-b")).toMatchObject({ alive: true, completed: byWorker.get("proc-b") });

    // SIGTERM drains and exits 0, removing its record at once.
    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
    const after = await client.fleet.status();
    expect(after.workers.find((w) => w.workerId === "proc-b")).toBeUndefined();
    expect(b.logs.some((l) => l.includes('"msg":"draining"'))).toBe(true);
  });

  it("drains on SIGTERM: a task running when the signal arrives still completes", async () => {
    const w = await startWorker("proc-drain");
    const slow = new Agent({ name: "slow", model: "scripted:slow", options: { scripted: { tokenDelayMs: 40 } } });
    const handle = await client.submit(slow, "one two three four five six seven eight");
    for await (const e of handle.stream()) if (e.type === "text") break;
    w.child.kill("SIGTERM");
    expect(await handle.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: one two three four five six seven eight" });
    expect(await w.exited).toBe(0);
  });

  const slowCounter = (name: string) =>
    new Agent({
      name,
      model: "scripted:count",
      tools: ["count"],
      options: { scripted: { toolCalls: [{ name: "count", args: {} }], reply: "t1 t2 t3 t4 t5 t6 t7 t8 t9 t10 t11 t12 t13 t14 t15", tokenDelayMs: 100 } },
    });
  const leased = { FLOTILLA_LEASE_MS: "800", FLOTILLA_CONCURRENCY: "2" };

  it("after kill -9, another worker reclaims the task once the lease lapses and completes it", async () => {
    const a = await startWorker("crash-a", leased);
    const handle = await client.submit(slowCounter("crashy"), "go", { detailed: true });
    for await (const e of handle.stream()) if (e.type === "text") break;
    expect((await handle.status()).workerId).toBe("crash-a");
    a.child.kill("SIGKILL");
    await a.exited;
    const b = await startWorker("crash-b", leased);
    expect(await handle.result({ timeoutMs: 20_000 })).toMatchObject({ text: expect.stringContaining("t15") });
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", attempt: 2, workerId: "crash-b" });
    const runs = await redis.hgetall(`${prefix}:test:runs`);
    expect([runs[`${handle.taskId}:1`], runs[`${handle.taskId}:2`]]).toEqual(["1", "1"]);
    const events = [];
    for await (const e of handle.stream()) events.push(e);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    const second = events.filter((e) => e.attempt === 2);
    expect(second[0]).toMatchObject({ type: "status", status: "running", workerId: "crash-b" });
    expect(second.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(events.at(-1)).toBe(second.at(-1));
    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
  });

  it("a worker frozen past its lease (SIGSTOP) cannot overwrite the outcome once resumed", async () => {
    const zombie = await startWorker("zombie", leased);
    const handle = await client.submit(slowCounter("frozen"), "go", { detailed: true });
    for await (const e of handle.stream()) if (e.type === "text") break;
    zombie.child.kill("SIGSTOP");
    const rescuer = await startWorker("rescuer", leased);
    await waitFor(async () => (await handle.status()).attempt === 2, { timeoutMs: 15_000, what: "the takeover" });
    zombie.child.kill("SIGCONT"); // resumes mid-run, while the rescuer runs attempt 2
    expect(await handle.result({ timeoutMs: 20_000 })).toMatchObject({ text: expect.stringContaining("t15") });
    await new Promise((r) => setTimeout(r, 1500)); // time for the zombie to try its late writes
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", attempt: 2, workerId: "rescuer" });
    const events = [];
    for await (const e of handle.stream()) events.push(e);
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed", attempt: 2 });
    // After the takeover, nothing from attempt 1 was accepted.
    const takeover = events.findIndex((e) => e.type === "status" && e.attempt === 2);
    expect(events.slice(takeover).every((e) => e.attempt === 2)).toBe(true);
    expect(zombie.logs.some((l) => l.includes("lease lost") || l.includes("lost its claim"))).toBe(true);
    // The zombie is still a healthy worker: it serves new work.
    const after = await client.submit(new Agent({ name: "after", model: "scripted:x" }), "still there?");
    expect(await after.result({ timeoutMs: 10_000 })).toMatchObject({ text: "Echo: still there?" });
    for (const p of [zombie, rescuer]) p.child.kill("SIGTERM");
    expect(await Promise.all([zombie.exited, rescuer.exited])).toEqual([0, 0]);
  });

  it("SIGTERM during a burst loses nothing: running tasks finish or are handed back, the rest run elsewhere", async () => {
    const burst = new Agent({
      name: "burst",
      model: "scripted:burst",
      tools: ["count"],
      options: { scripted: { toolCalls: [{ name: "count", args: {} }], reply: "b1 b2 b3 b4 b5 b6", tokenDelayMs: 15 } },
    });
    const env = { FLOTILLA_CONCURRENCY: "8", FLOTILLA_DRAIN_TIMEOUT_MS: "60" };
    const [a, b] = await Promise.all([startWorker("burst-a", env), startWorker("burst-b", env)]);
    const handles = await Promise.all(Array.from({ length: 300 }, (_, i) => client.submit(burst, `burst ${i}`)));
    const results = handles.map((h) => h.result({ timeoutMs: 60_000 }));
    await new Promise((r) => setTimeout(r, 400)); // mid-burst
    a.child.kill("SIGTERM");
    expect(await a.exited).toBe(0);
    const settled = await Promise.allSettled(results);
    expect(settled.filter((s) => s.status === "rejected").map((s) => String((s as PromiseRejectedResult).reason))).toEqual([]);
    const runs = await redis.hgetall(`${prefix}:test:runs`);
    const ids = new Set(handles.map((h) => h.taskId));
    const mine = Object.entries(runs).filter(([k]) => ids.has(k.slice(0, k.lastIndexOf(":"))));
    expect(mine.filter(([, n]) => n !== "1")).toEqual([]);
    const handedBack = (await Promise.all(handles.map((h) => h.status()))).filter((s) => s.attempt > 1).length;
    expect(a.logs.some((l) => l.includes('"msg":"draining"'))).toBe(true);
    expect(await client.fleet.queueDepth("default")).toMatchObject({
      waiting: 0,
      lanes: { high: 0, normal: 0, low: 0 },
      inFlight: 0,
      delayed: 0,
      oldestWaitMs: 0,
    });
    console.log(JSON.stringify({ sigtermBurst: { tasks: 300, handedBack } }));
    b.child.kill("SIGTERM");
    expect(await b.exited).toBe(0);
  });

  it("refuses a bad configuration with a clear message and exit code 2", async () => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, "--concurrency", "zero"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let err = "";
    child.stderr.on("data", (d: Buffer) => {
      err += d.toString();
    });
    const code = await new Promise((resolve) => child.on("exit", resolve));
    expect(code).toBe(2);
    expect(err).toMatch(/invalid worker configuration: concurrency/);
  });
});
