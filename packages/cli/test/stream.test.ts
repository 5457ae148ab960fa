// `flotilla stream` and `flotilla submit`: following a live task from another process to its end.
// @cluster: a live task followed from another process (sharded Pub/Sub)
import { defineTool } from "@flotilla/agent";
import type { FlotillaEvent } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { flotilla, json, lines, start, tempDir, writeJson } from "./cli.ts";

const REPLY = "one two three four five six";
const slow = (name: string) => scripted(name, { reply: REPLY, tokenDelayMs: 40 });
const textOf = (events: FlotillaEvent[]) => events.map((e) => (e.type === "text" ? e.delta : "")).join("");

describe("flotilla stream", () => {
  const env = useFlotilla("cli-stream");

  it("follows a live task to its end: its text on stdout as it comes, what happens on stderr, exit 0", async () => {
    const id = await env.submit(slow("slow"), "x", { queue: "cli-stream-live" });
    // Started before any worker serves the queue: it waits for the task to start, then follows it.
    // A process: its output reaches the pipe as it comes, and it exits by itself once the task ended.
    const streaming = start(env.prefix, ["stream", id], { process: true });
    await env.worker({ queues: ["cli-stream-live"], workerId: "cli-stream-w" });
    await streaming.output((err) => err.includes("[running]"), { on: "stderr" });
    // Still going while its text arrives: the process did not wait for the end to print.
    await streaming.output((out) => out.startsWith("one"));
    const exit = await streaming.exited;
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stdout).toBe(`${REPLY}\n`);
    expect(exit.stderr).toContain("[running] attempt 1 on cli-stream-w");
    expect(exit.stderr).toContain("[completed]");
    expect(exit.stderr).not.toContain("error");
    expect(await env.until(id)).toMatchObject({ status: "COMPLETED" });
  });

  it("stays with a task while it waits, and prints what comes once it resumes", async () => {
    const publish = defineTool({ name: "publish", description: "publishes", inputSchema: z.object({}), approval: true, execute: () => "published" });
    await env.worker({ queues: ["cli-stream-wait"], tools: [publish] });
    const agent = scripted("publisher", { toolCalls: [{ name: "publish", args: {} }] }, { tools: ["publish"] });
    const id = await env.submit(agent, "the post", { queue: "cli-stream-wait" });
    const streaming = start(env.prefix, ["stream", id]);
    // WAITING for as long as nobody approves: the stream is still there, nothing of the answer printed yet.
    await streaming.output((err) => err.includes('[waiting] for signal "approval" before publish {}'), { on: "stderr" });
    expect(streaming.ended()).toBe(false);
    expect(streaming.stdout()).toBe("");
    await env.client().handle(id).approve();
    const exit = await streaming.exited;
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stdout).toBe("publish returned published. Echo: the post\n");
    expect(exit.stderr).toContain('[pending] resumed by signal "approval"');
    expect(exit.stderr).toContain("← publish: published");
    expect(exit.stderr).toContain("[completed]");
  });

  it("--json prints every event as a line of JSON, in seq order, ending with the terminal status", async () => {
    await env.worker({ queues: ["cli-stream-json"] });
    const id = await env.submit(slow("slow-json"), "x", { queue: "cli-stream-json" });
    const exit = await flotilla(env.prefix, ["stream", id, "--json"]);
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stderr).toBe("");
    const events = lines<FlotillaEvent>(exit.stdout);
    expect(events.every((e) => e.taskId === id)).toBe(true);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(textOf(events)).toBe(REPLY);
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(events.map((e) => e.type)).toEqual(expect.arrayContaining(["status", "text", "step", "usage"]));

    // --after: only what came after that seq (a replay of a finished task ends at once).
    const after = await flotilla(env.prefix, ["stream", id, "--json", "--after", "3"]);
    expect(after.code).toBe(0);
    expect(lines<FlotillaEvent>(after.stdout).map((e) => e.seq)).toEqual(events.slice(3).map((e) => e.seq));
    // After its last event: nothing to print, and it ended COMPLETED.
    const past = await flotilla(env.prefix, ["stream", id, "--after", String(events.length)]);
    expect(past).toMatchObject({ code: 0, stdout: "" });
  });

  it("exits 1 with the task's error when it fails", async () => {
    await env.worker({ queues: ["cli-stream-fail"] });
    const id = await env.submit(scripted("breaks", { failWith: "no luck" }), "x", { queue: "cli-stream-fail" });
    const exit = await flotilla(env.prefix, ["stream", id]);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain("[failed] [AGENT_ERROR] no luck");
    expect(exit.stderr.trimEnd().split("\n").at(-1)).toBe(`error: task ${id} failed: [AGENT_ERROR] no luck`);
  });

  it("Ctrl-C stops following: exit 130, the task left running", async () => {
    await env.worker({ queues: ["cli-stream-int"] });
    const id = await env.submit(scripted("very-slow", { reply: REPLY, tokenDelayMs: 2000 }), "x", { queue: "cli-stream-int" });
    // A process: Ctrl-C as the shell sends it (SIGINT), and its exit code.
    const streaming = start(env.prefix, ["stream", id], { process: true });
    await streaming.output((err) => err.includes("[running]"), { on: "stderr" });
    streaming.interrupt();
    const exit = await streaming.exited;
    expect(exit.code).toBe(130);
    expect((await env.client().handle(id).status()).status).toBe("RUNNING");
    await env.client().handle(id).cancel();
  });
});

describe("flotilla submit", () => {
  const env = useFlotilla("cli-submit");
  const dir = tempDir();

  it("submits --agent/--model with an input and prints the task id; a worker runs it", async () => {
    await env.worker({ queues: ["cli-submit"] });
    const r = await flotilla(env.prefix, ["submit", "--agent", "echo", "--model", "scripted:echo", "hi there", "--queue", "cli-submit"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^cli-submit\/\S+\n$/);
    const id = r.stdout.trim();
    expect(await env.until(id)).toMatchObject({ status: "COMPLETED", agent: "echo", result: { text: "Echo: hi there" } });
  });

  it("submits an agent from a JSON file (an Agent's toJSON()) with options; --json prints { taskId }", async () => {
    const file = writeJson(dir, "agent.json", scripted("from-file", { reply: "filed {input}" }).toJSON());
    const out = await json<{ taskId: string }>(env.prefix, ["submit", file, "the input", "-q", "cli-submit-file", "--id", "named", "--max-retries", "2"]);
    expect(out).toEqual({ taskId: "cli-submit-file/named" });
    const pending = await env.client().handle(out.taskId).status();
    expect(pending).toMatchObject({ status: "PENDING", agent: "from-file", maxRetries: 2 });
    await env.worker({ queues: ["cli-submit-file"] });
    expect(await env.until(out.taskId)).toMatchObject({ status: "COMPLETED", result: { text: "filed the input" } });
    // The same id again is refused.
    const again = await flotilla(env.prefix, ["submit", file, "x", "-q", "cli-submit-file", "--id", "named"]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe('error: a task with id "cli-submit-file/named" already exists\n');
  });

  it("--follow streams it to its end: text on stdout, the id on stderr", async () => {
    await env.worker({ queues: ["cli-submit-follow"] });
    const file = writeJson(dir, "slow.json", slow("slow-follow").toJSON());
    const r = await flotilla(env.prefix, ["submit", file, "x", "--queue", "cli-submit-follow", "--follow"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${REPLY}\n`);
    const id = /^submitted (cli-submit-follow\/\S+)$/m.exec(r.stderr)?.[1];
    expect(id).toBeDefined();
    expect(await env.client().handle(id!).status()).toMatchObject({ status: "COMPLETED" });
  });

  it("--follow --json: a `submitted` line with the id, then the task's events", async () => {
    await env.worker({ queues: ["cli-submit-follow-json"] });
    const r = await flotilla(env.prefix, [
      "submit",
      "--agent",
      "echo",
      "--model",
      "scripted:echo",
      "--input-json",
      '{"n":1}',
      "-q",
      "cli-submit-follow-json",
      "-f",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const [first, ...events] = lines<FlotillaEvent & { type: string }>(r.stdout);
    expect(first).toEqual({ type: "submitted", taskId: expect.stringMatching(/^cli-submit-follow-json\//) });
    expect(events.every((e) => e.taskId === first!.taskId)).toBe(true);
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(textOf(events)).toBe('Echo: {"n":1}');
  });

  it("--follow of a task that fails exits 1", async () => {
    await env.worker({ queues: ["cli-submit-fail"] });
    const file = writeJson(dir, "fails.json", scripted("fails", { failWith: "nope" }).toJSON());
    const r = await flotilla(env.prefix, ["submit", file, "x", "-q", "cli-submit-fail", "--follow"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: task cli-submit-fail\/\S+ failed: \[AGENT_ERROR\] nope\n$/);
  });

  it("refuses an agent file it cannot read, and an agent the client refuses, with one line and exit 1", async () => {
    const missing = await flotilla(env.prefix, ["submit", `${dir}/missing.json`, "x"]);
    expect(missing).toMatchObject({ code: 1, stdout: "", stderr: `error: cannot read the agent ${dir}/missing.json: ENOENT\n` });
    const bad = writeJson(dir, "bad.json", { name: "no model" });
    const refused = await flotilla(env.prefix, ["submit", bad, "x"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^error: invalid agent: .*\n$/);
  });
});
