// `flotilla tasks` and `flotilla task <id>`: listings and records, as people and as JSON read them.
// @cluster: task listings merged across queues (slots)
import type { TaskPage, TaskResult } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { beforeAll, describe, expect, it } from "vitest";
import { flotilla, json, lines, start } from "./cli.ts";

describe("flotilla tasks / task", () => {
  const env = useFlotilla("cli-tasks");
  let done: string;
  let failed: string;
  let pending: string;

  beforeAll(async () => {
    await env.worker({ queues: ["cli-tasks"], workerId: "cli-tasks-worker" });
    done = await env.submit(scripted("greeter"), "hello there", { queue: "cli-tasks" });
    failed = await env.submit(scripted("breaker", { failWith: "it broke" }), "x", { queue: "cli-tasks", maxRetries: 1, backoff: { delayMs: 10 } });
    await env.until(done);
    await env.until(failed);
    // Nobody serves this queue: it stays PENDING.
    pending = await env.submit(scripted("idle"), "later", { queue: "cli-tasks-idle" });
  });

  it("lists tasks newest first with their status, agent, input and worker", async () => {
    const r = await flotilla(env.prefix, ["tasks"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe("");
    const rows = r.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^TASK\s+STATUS\s+AGENT\s+INPUT/);
    expect(rows.slice(1).map((row) => row.split(/\s+/)[0])).toEqual([pending, failed, done]);
    const doneRow = rows.find((row) => row.startsWith(done))!;
    expect(doneRow).toMatch(/COMPLETED\s+greeter\s+hello there\s/);
    expect(doneRow).toContain("cli-tasks-worker");
    expect(rows.find((row) => row.startsWith(failed))).toMatch(/FAILED\s+breaker.*1\/1.*\[AGENT_ERROR\] it broke/);
    expect(rows.find((row) => row.startsWith(pending))).toMatch(/PENDING\s+idle/);
  });

  it("--json prints the page as the client returns it; --queue, --status and --limit filter; --cursor pages on", async () => {
    const all = await json<TaskPage>(env.prefix, ["tasks"]);
    expect(all.tasks.map((t) => t.taskId)).toEqual([pending, failed, done]);
    expect(all.tasks[1]).toMatchObject({ status: "FAILED", agent: "breaker", retries: 1, maxRetries: 1, error: { code: "AGENT_ERROR", message: "it broke" } });
    expect(all.nextCursor).toBeUndefined();

    expect((await json<TaskPage>(env.prefix, ["tasks", "--queue", "cli-tasks-idle"])).tasks.map((t) => t.taskId)).toEqual([pending]);
    expect((await json<TaskPage>(env.prefix, ["tasks", "--status", "failed"])).tasks.map((t) => t.taskId)).toEqual([failed]);

    const first = await json<TaskPage>(env.prefix, ["tasks", "--queue", "cli-tasks", "--limit", "1"]);
    expect(first.tasks.map((t) => t.taskId)).toEqual([failed]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await json<TaskPage>(env.prefix, ["tasks", "--queue", "cli-tasks", "--limit", "1", "--cursor", first.nextCursor!]);
    expect(second.tasks.map((t) => t.taskId)).toEqual([done]);

    const human = await flotilla(env.prefix, ["tasks", "--queue", "cli-tasks", "--limit", "1"]);
    expect(human.stdout).toContain(`more: --cursor ${first.nextCursor}`);
  });

  it("says so when there is no task", async () => {
    const r = await flotilla(env.prefix, ["tasks", "--queue", "cli-tasks-nothing"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe("no tasks\n");
    expect(await json(env.prefix, ["tasks", "--queue", "cli-tasks-nothing"])).toEqual({ tasks: [] });
  });

  it("task <id> shows the record: status, attempt, retries, worker, timings and the answer", async () => {
    const r = await flotilla(env.prefix, ["task", done]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^task:\s+/m);
    expect(r.stdout).toMatch(new RegExp(`^task:\\s+${done}$`, "m"));
    expect(r.stdout).toMatch(/^status:\s+COMPLETED$/m);
    expect(r.stdout).toMatch(/^agent:\s+greeter$/m);
    expect(r.stdout).toMatch(/^input:\s+hello there$/m);
    expect(r.stdout).toMatch(/^attempt:\s+1$/m);
    expect(r.stdout).toMatch(/^retries:\s+0\/0$/m);
    expect(r.stdout).toMatch(/^worker:\s+cli-tasks-worker$/m);
    expect(r.stdout).toMatch(/^started:\s+\d{4}-\d\d-\d\dT/m);
    expect(r.stdout).toMatch(/^took:\s+\d/m);
    expect(r.stdout).toMatch(/^result:\nEcho: hello there$/m);
  });

  it("task <id> of a failed task shows its error and retries; --json is the record", async () => {
    const r = await flotilla(env.prefix, ["task", failed]);
    expect(r.stdout).toMatch(/^status:\s+FAILED$/m);
    expect(r.stdout).toMatch(/^retries:\s+1\/1$/m);
    expect(r.stdout).toMatch(/^attempt:\s+2$/m);
    expect(r.stdout).toMatch(/^error:\s+\[AGENT_ERROR\] it broke$/m);
    const record = await json<TaskResult>(env.prefix, ["task", failed]);
    expect(record).toMatchObject({ taskId: failed, status: "FAILED", attempt: 2, retries: 1, maxRetries: 1, error: { code: "AGENT_ERROR" } });
    const completed = await json<TaskResult>(env.prefix, ["task", done]);
    expect(completed).toMatchObject({ taskId: done, status: "COMPLETED", workerId: "cli-tasks-worker", result: { text: "Echo: hello there" } });
    expect(completed.completedAt).toBeGreaterThanOrEqual(completed.startedAt!);
  });

  it("tasks --watch redraws with what changed until Ctrl-C, then exits 0", async () => {
    // A process: Ctrl-C as the shell sends it (SIGINT), and its exit code.
    const watching = start(env.prefix, ["tasks", "--queue", "cli-tasks-watch", "--watch", "200", "--json"], { process: true });
    await watching.output((out) => out.includes('{"tasks":[]}'));
    const added = await env.submit(scripted("late"), "x", { queue: "cli-tasks-watch" });
    await watching.output((out) => out.includes(added));
    watching.interrupt();
    const exit = await watching.exited;
    expect(exit.code, exit.stderr).toBe(0);
    const frames = lines<TaskPage>(exit.stdout);
    expect(frames.length).toBeGreaterThanOrEqual(2);
    expect(frames[0]!.tasks).toEqual([]);
    expect(frames.at(-1)!.tasks.map((t) => t.taskId)).toEqual([added]);
  });
});
