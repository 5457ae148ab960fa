// The fleet from the command line: queues, workers, alerts, schedules and graph runs.
// @cluster: queues, workers, alerts, schedules and runs read across slots
import type { FleetStatus, QueueOverview, ScheduleInfo } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, json, lines, start } from "./cli.ts";

/** The table row that starts with `first`, split on runs of spaces. */
function row(stdout: string, first: string): string[] {
  const line = stdout.split("\n").find((l) => l.startsWith(`${first} `));
  expect(line, `no row ${first} in:\n${stdout}`).toBeDefined();
  return line!.split(/\s{2,}/);
}

describe("flotilla queues / workers / alerts", () => {
  const env = useFlotilla("cli-fleet");

  it("queues: waiting by lane, in flight, dead, oldest wait and recent outcomes per queue", async () => {
    await env.submit(scripted("a"), "x", { queue: "cli-q-idle", priority: "high" });
    await env.submit(scripted("a"), "x", { queue: "cli-q-idle" });
    await env.submit(scripted("a"), "x", { queue: "cli-q-idle", priority: "low" });
    await env.worker({ queues: ["cli-q-busy"] });
    await env.until(await env.submit(scripted("ok"), "x", { queue: "cli-q-busy" }));
    await env.until(await env.submit(scripted("ko", { failWith: "no" }), "x", { queue: "cli-q-busy" }));

    const { queues } = await json<{ queues: QueueOverview[] }>(env.prefix, ["queues"]);
    expect(queues.map((q) => q.queue)).toEqual(["cli-q-busy", "cli-q-idle"]);
    const [busy, idle] = queues;
    expect(idle).toMatchObject({ waiting: 3, lanes: { high: 1, normal: 1, low: 1 }, inFlight: 0, dead: 0, workers: 0 });
    expect(idle!.oldestWaitMs).toBeGreaterThanOrEqual(0);
    expect(busy).toMatchObject({ waiting: 0, dead: 1, recent: { completed: 1, failed: 1, windowMs: 60_000 }, workers: 1 });

    const r = await flotilla(env.prefix, ["queues"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^QUEUE\s+WAITING\s+HIGH\/NORMAL\/LOW\s+IN FLIGHT\s+DELAYED\s+DEAD\s+OLDEST WAIT\s+COMPLETED\s+FAILED/);
    expect(row(r.stdout, "cli-q-idle").slice(0, 6)).toEqual(["cli-q-idle", "3", "1/1/1", "0", "0", "0"]);
    expect(row(r.stdout, "cli-q-busy").slice(0, 9)).toEqual(["cli-q-busy", "0", "0/0/0", "0", "0", "1", "-", "1", "1"]);
    // The last column: live workers serving it; none serves the idle queue, whose tasks will wait.
    expect(r.stdout).toMatch(/WAIT P95\s+WORKERS\n/);
    expect(row(r.stdout, "cli-q-idle").at(-1)).toBe("0");
    expect(row(r.stdout, "cli-q-busy").at(-1)).toBe("1");
    expect(r.stdout).toContain("the last 1m00s");
  });

  it("workers: id, state, host, version, queues, running, last beat; --json is the fleet status", async () => {
    await env.worker({ queues: ["cli-w-a", "cli-w-b"], workerId: "cli-fleet-worker", concurrency: 3, buildId: "b42" });
    const fleet = await json<FleetStatus>(env.prefix, ["workers"]);
    const mine = fleet.workers.find((w) => w.workerId === "cli-fleet-worker");
    expect(mine).toMatchObject({ alive: true, state: "running", queues: ["cli-w-a", "cli-w-b"], concurrency: 3, running: [], buildId: "b42" });
    expect(fleet.live).toBeGreaterThanOrEqual(1);

    const r = await flotilla(env.prefix, ["workers"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^WORKER\s+STATE\s+HOST:PID\s+VERSION\s+QUEUES\s+NODE TYPES\s+RUNNING/);
    const cells = row(r.stdout, "cli-fleet-worker");
    expect(cells.slice(0, 7)).toEqual([
      "cli-fleet-worker",
      "running",
      `${mine!.hostname}:${mine!.pid}`,
      `${mine!.version} (b42)`,
      "cli-w-a,cli-w-b",
      "-",
      "0/3",
    ]);
    expect(mine!.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(cells.at(-1)).toMatch(/ago$/);
    expect(r.stdout).toMatch(/\d+ live, \d+ dead, \d+ tasks? running/);
  });

  it("workers: a worker that is not ready says why, under the table", async () => {
    // As a worker's heartbeat writes it while its Redis is full (the record is the worker's to write; this stands in for one).
    const [seconds] = await env.redis.time();
    const now = Number(seconds) * 1000;
    const record = {
      workerId: "cli-stuck-worker",
      hostname: "h",
      pid: 7,
      queues: ["cli-w-c"],
      concurrency: 2,
      running: [],
      completed: 0,
      failed: 0,
      startedAt: now - 60_000,
      lastBeat: now,
      heartbeatTtlMs: 15_000,
      state: "not-ready",
      reasons: [{ reason: "redis-full", detail: "Redis at 127.0.0.1:6379 is full", since: now - 30_000 }],
      version: "1.2.3",
    };
    await env.redis.set(env.keys.worker(record.workerId), JSON.stringify(record), "PX", 15_000);
    await env.redis.zadd(env.keys.workers(), now, record.workerId);
    const r = await flotilla(env.prefix, ["workers"]);
    expect(r.code, r.stderr).toBe(0);
    expect(row(r.stdout, "cli-stuck-worker").slice(0, 4)).toEqual(["cli-stuck-worker", "not-ready", "h:7", "1.2.3"]);
    expect(r.stdout).toMatch(/^! cli-stuck-worker redis-full since 3\d(\.\d)?s ago: Redis at 127\.0\.0\.1:6379 is full$/m);
  });

  it("workers --watch redraws until Ctrl-C", async () => {
    const watching = start(env.prefix, ["workers", "--watch", "150"]);
    // Two frames, each ending with the fleet's summary.
    await watching.output((out) => out.split(" live, ").length > 2);
    watching.interrupt();
    const exit = await watching.exited;
    expect(exit.code).toBe(0);
    // Not a terminal: each frame after the last, no screen clearing.
    expect(exit.stdout).not.toContain("\x1b[");
  });

  it("alerts: those firing and the recent events, as the workers' alert sink keeps them", async () => {
    expect(await json(env.prefix, ["alerts"])).toEqual({ events: [], firing: [] });
    const empty = await flotilla(env.prefix, ["alerts"]);
    expect(empty.stdout).toContain("no alert is firing");
    const now = Date.now();
    const event = (rule: string, state: "firing" | "resolved", at: number) => ({
      id: `${rule}-${at}`,
      rule,
      severity: "critical",
      state,
      queue: "cli-q",
      message: `${rule} is ${state}`,
      value: 9,
      threshold: 5,
      since: now - 60_000,
      at,
    });
    // As redisStreamSink writes them (the stream is the workers' to write; this test stands in for one).
    for (const e of [event("depth", "firing", now - 3000), event("failures", "firing", now - 2000), event("failures", "resolved", now - 1000)]) {
      await env.redis.xadd(env.keys.alerts(), "*", "event", JSON.stringify(e));
    }
    const alerts = await json<{ events: Array<{ rule: string; state: string }>; firing: Array<{ rule: string }> }>(env.prefix, ["alerts"]);
    expect(alerts.firing.map((e) => e.rule)).toEqual(["depth"]);
    expect(alerts.events.map((e) => `${e.rule}:${e.state}`)).toEqual(["failures:resolved", "failures:firing", "depth:firing"]);
    const r = await flotilla(env.prefix, ["alerts"]);
    const [firing, recent] = r.stdout.split("recent events");
    expect(firing).toMatch(/depth\s+cli-q\s+critical\s+1m\d\ds ago\s+9 \/ 5\s+depth is firing/);
    expect(firing).not.toContain("failures");
    expect(recent).toContain("failures is resolved");
    expect(recent).toContain("depth is firing");
  });
});

describe("flotilla schedules / runs", () => {
  const env = useFlotilla("cli-schedules");

  it("lists, pauses, resumes and deletes schedules", async () => {
    await env.client().schedules.create({ id: "nightly", cron: "0 3 * * *", agent: scripted("reporter"), input: "report", options: { queue: "cli-sched" } });
    await env.client().schedules.create({ id: "often", every: 60_000, agent: scripted("pinger"), input: "ping", paused: true });

    const { schedules } = await json<{ schedules: ScheduleInfo[] }>(env.prefix, ["schedules", "list"]);
    expect(schedules.map((s) => [s.id, s.paused, s.queue, s.agent])).toEqual(
      expect.arrayContaining([
        ["nightly", false, "cli-sched", "reporter"],
        ["often", true, "default", "pinger"],
      ]),
    );
    const listed = await flotilla(env.prefix, ["schedules"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(row(listed.stdout, "nightly").slice(0, 5)).toEqual(["nightly", "active", "cron 0 3 * * *", "cli-sched", "reporter"]);
    expect(row(listed.stdout, "often").slice(0, 3)).toEqual(["often", "paused", "every 1m00s"]);

    expect(await flotilla(env.prefix, ["schedules", "pause", "nightly"])).toMatchObject({ code: 0, stdout: "paused schedule nightly\n" });
    expect((await env.client().schedules.get("nightly"))?.paused).toBe(true);
    expect(await json(env.prefix, ["schedules", "resume", "nightly"])).toEqual({ id: "nightly", resumed: true });
    expect((await env.client().schedules.get("nightly"))?.paused).toBe(false);
    expect(await flotilla(env.prefix, ["schedules", "delete", "often"])).toMatchObject({ code: 0, stdout: "deleted schedule often\n" });
    expect(await env.client().schedules.get("often")).toBeUndefined();

    for (const verb of ["pause", "resume", "delete"]) {
      expect(await flotilla(env.prefix, ["schedules", verb, "often"])).toMatchObject({ code: 1, stdout: "", stderr: "error: no schedule often\n" });
    }
  });

  it("runs lists graph runs and run <id> shows one with its nodes", async () => {
    expect(await json(env.prefix, ["runs"])).toEqual({ runs: [] });
    // No worker serves its node types: it stays RUNNING with its first node queued.
    const handle = await env.client().startGraph(
      {
        name: "cli-graph",
        nodes: [
          { id: "first", type: "cli-nobody", next: ["second"] },
          { id: "second", type: "cli-nobody" },
        ],
      },
      "go",
    );
    const page = await json<{ runs: Array<{ runId: string; graph: string; status: string }> }>(env.prefix, ["runs"]);
    expect(page.runs).toEqual([expect.objectContaining({ runId: handle.runId, graph: "cli-graph", status: "RUNNING" })]);
    const listed = await flotilla(env.prefix, ["runs", "--status", "running"]);
    expect(row(listed.stdout, handle.runId).slice(0, 3)).toEqual([handle.runId, "cli-graph", "RUNNING"]);
    expect((await json<{ runs: unknown[] }>(env.prefix, ["runs", "--status", "SUCCEEDED"])).runs).toEqual([]);

    const shown = await flotilla(env.prefix, ["run", handle.runId]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^run:\\s+${handle.runId}$`, "m"));
    expect(shown.stdout).toMatch(/^status:\s+RUNNING$/m);
    expect(shown.stdout).toMatch(/^first@\S*\s+QUEUED\s+\S+/m);
    const run = await json<{ runId: string; nodes: Array<{ node: string; status: string; taskId: string }> }>(env.prefix, ["run", handle.runId]);
    expect(run.nodes).toEqual([expect.objectContaining({ node: "first", status: "QUEUED" })]);

    const unknown = await flotilla(env.prefix, ["run", "nope"]);
    expect(unknown).toMatchObject({ code: 1, stdout: "", stderr: "error: no graph run nope\n" });
    await handle.cancel();
    const ended = lines<{ runs: Array<{ status: string }> }>((await flotilla(env.prefix, ["runs", "--json"])).stdout);
    expect(ended[0]!.runs[0]!.status).toBe("CANCELLED");
  });
});
