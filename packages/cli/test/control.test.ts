// Acting on a task from the command line: cancel, retry, and signal / approve / reject a task
// WAITING for approval, against a real worker.
import { defineTool } from "@flotilla/agent";
import type { TaskResult } from "@flotilla/client";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { flotilla, json } from "./cli.ts";

describe("flotilla cancel / retry", () => {
  const env = useFlotilla("cli-control");

  it("cancels a running task: its worker stops it and it ends CANCELLED", async () => {
    await env.worker({ queues: ["cli-cancel"] });
    const id = await env.submit(scripted("slow", { reply: "a b c d e f g h", tokenDelayMs: 1000 }), "x", { queue: "cli-cancel" });
    await env.until(id, ["RUNNING"]);
    const r = await flotilla(env.prefix, ["cancel", id, "--reason", "changed my mind"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`cancel requested: ${id} is RUNNING, its worker stops it\n`);
    expect(await env.until(id)).toMatchObject({ status: "CANCELLED", cancelReason: "changed my mind" });
    // Ended: there is nothing to cancel any more.
    const again = await flotilla(env.prefix, ["cancel", id]);
    expect(again).toMatchObject({ code: 1, stdout: "", stderr: `error: task ${id} already ended (CANCELLED): nothing to cancel\n` });
  });

  it("cancels a waiting task at once; --json says how", async () => {
    const id = await env.submit(scripted("never"), "x", { queue: "cli-cancel-idle" });
    expect(await json(env.prefix, ["cancel", id])).toEqual({ taskId: id, outcome: "cancelled", status: "CANCELLED" });
    expect((await env.client().handle(id).status()).status).toBe("CANCELLED");
  });

  it("retries a failed task: it runs again, from its dead letter", async () => {
    await env.worker({ queues: ["cli-retry"] });
    const id = await env.submit(scripted("fails", { failWith: "flaky" }), "x", { queue: "cli-retry" });
    expect(await env.until(id)).toMatchObject({ status: "FAILED", attempt: 1 });
    const r = await flotilla(env.prefix, ["retry", id]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^retried ${id}: (PENDING|RUNNING|FAILED)\\n$`));
    // It ran a second time (and failed again: the agent always does).
    const again = await waitFor(async () => {
      const record = await env.client().handle(id).status();
      return record.attempt === 2 && record.status === "FAILED" ? record : undefined;
    });
    expect(again.error).toMatchObject({ code: "AGENT_ERROR", message: "flaky" });
    // --json, a third time.
    const out = await json<{ taskId: string; status: string }>(env.prefix, ["retry", id]);
    expect(out.taskId).toBe(id);
    await waitFor(async () => (await env.client().handle(id).status()).attempt === 3);
  });

  it("refuses to retry a task that did not fail: exit 1", async () => {
    await env.worker({ queues: ["cli-retry-ok"] });
    const id = await env.submit(scripted("fine"), "x", { queue: "cli-retry-ok" });
    await env.until(id);
    const r = await flotilla(env.prefix, ["retry", id]);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(`error: invalid task: taskId: task ${id} is COMPLETED; only a FAILED task can be retried\n`);
  });
});

describe("flotilla signal / approve / reject", () => {
  const env = useFlotilla("cli-hitl");
  const sent: string[] = [];
  const sendEmail = defineTool({
    name: "send_email",
    description: "sends an e-mail",
    inputSchema: z.object({ to: z.string() }),
    approval: true,
    execute: (args) => {
      sent.push(args.to);
      return `sent to ${args.to}`;
    },
  });
  const mailer = (to: string) => scripted("mailer", { toolCalls: [{ name: "send_email", args: { to } }] }, { tools: ["send_email"] });

  /** A task WAITING for approval to e-mail `to`. */
  async function waiting(to: string): Promise<string> {
    const id = await env.submit(mailer(to), "tell them", { queue: "cli-hitl" });
    await env.until(id, ["WAITING"]);
    return id;
  }

  it("task <id> shows what a WAITING task waits for; approve runs the tool and it completes", async () => {
    await env.worker({ queues: ["cli-hitl"], tools: [sendEmail] });
    const id = await waiting("ceo@example.com");
    const shown = await flotilla(env.prefix, ["task", id]);
    expect(shown.stdout).toMatch(/^status:\s+WAITING$/m);
    expect(shown.stdout).toMatch(/^waiting for:\s+signal "approval" \(approval\)$/m);
    expect(shown.stdout).toMatch(/^tool:\s+send_email \{"to":"ceo@example.com"\}$/m);
    const record = await json<TaskResult>(env.prefix, ["task", id]);
    expect(record).toMatchObject({ status: "WAITING", waiting: { name: "approval", kind: "approval", tool: "send_email", args: { to: "ceo@example.com" } } });

    const r = await flotilla(env.prefix, ["approve", id, "looks fine"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`sent approval {"approved":true,"reason":"looks fine"} to ${id}\n`);
    expect(await env.until(id)).toMatchObject({ status: "COMPLETED", result: { text: "send_email returned sent to ceo@example.com. Echo: tell them" } });
    expect(sent).toContain("ceo@example.com");

    // Taken once: a second approval is refused.
    const again = await flotilla(env.prefix, ["approve", id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toBe(`error: task ${id} does not wait for signal "approval": it is COMPLETED, not WAITING\n`);
  });

  it("reject: the tool does not run, the model is told, the task completes", async () => {
    await env.worker({ queues: ["cli-hitl"], tools: [sendEmail] });
    const id = await waiting("all@example.com");
    const out = await json(env.prefix, ["reject", id, "too broad"]);
    expect(out).toEqual({ taskId: id, signal: "approval", payload: { approved: false, reason: "too broad" } });
    const done = await env.until(id);
    expect(done.status).toBe("COMPLETED");
    expect(sent).not.toContain("all@example.com");
  });

  it("signal <id> <name> <json> sends any signal with its payload", async () => {
    await env.worker({ queues: ["cli-hitl"], tools: [sendEmail] });
    const id = await waiting("ops@example.com");
    // Not the signal it waits for: refused.
    const wrong = await flotilla(env.prefix, ["signal", id, "other"]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toBe(`error: task ${id} does not wait for signal "other": it waits for signal "approval"\n`);
    const r = await flotilla(env.prefix, ["signal", id, "approval", '{"approved":true}']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`sent approval {"approved":true} to ${id}\n`);
    expect(await env.until(id)).toMatchObject({ status: "COMPLETED" });
    expect(sent).toContain("ops@example.com");
  });
});
