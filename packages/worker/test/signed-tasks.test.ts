// Signed tasks through real Workers on Redis: a worker with signingSecrets runs only tasks signed
// with one of them; anything unsigned or changed since it was signed fails BAD_SIGNATURE and is
// dead-lettered, never run. The tasks the worker creates itself (a schedule's) are signed too.
import { ErrorCodes, type JsonValue } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { Executor } from "../src/index.ts";

const SECRET = "correct-horse-battery-staple";
const OLD = "the-secret-we-rotate-out-now";

describe("signed tasks", () => {
  const h = useFlotilla("signed");
  const ran: string[] = [];
  const recording: Executor = {
    execute: async (ctx): Promise<JsonValue> => {
      ran.push(ctx.taskId);
      return `ran ${JSON.stringify(ctx.input)}`;
    },
  };

  it("runs a task its client signed, under the current secret or one being rotated out", async () => {
    await h.worker({ queues: ["signed-ok"], executor: recording, signingSecrets: [SECRET, OLD] });
    const current = await h.client({ signingSecret: SECRET }).submit(scripted("a"), "now", { queue: "signed-ok" });
    const rotated = await h.client({ signingSecret: OLD }).submit(scripted("a"), "before", { queue: "signed-ok" });
    expect(await current.result({ timeoutMs: 10_000 })).toBe('ran "now"');
    expect(await rotated.result({ timeoutMs: 10_000 })).toBe('ran "before"');
  });

  it("refuses an unsigned task, one signed with another secret, and one changed since it was signed: FAILED BAD_SIGNATURE, dead-lettered, never run", async () => {
    const unsigned = await h.client().submit(scripted("a"), "plain", { queue: "signed-no" });
    const foreign = await h.client({ signingSecret: "someone-elses-secret-entirely" }).submit(scripted("a"), "foreign", { queue: "signed-no" });
    const changed = await h.client({ signingSecret: SECRET }).submit(scripted("a"), "harmless", { queue: "signed-no" });
    // Someone with write access to Redis but not the secret swaps the input.
    const payload = JSON.parse((await h.redis.hget(h.keys.task(changed.taskId), "payload"))!) as { input: string };
    payload.input = "rm -rf /";
    await h.redis.hset(h.keys.task(changed.taskId), "payload", JSON.stringify(payload));
    const before = ran.length;
    await h.worker({ queues: ["signed-no"], executor: recording, signingSecrets: [SECRET] });
    for (const handle of [unsigned, foreign, changed]) {
      await expect(handle.result({ timeoutMs: 10_000 })).rejects.toMatchObject({ taskError: { code: ErrorCodes.BAD_SIGNATURE } });
    }
    expect((await unsigned.status()).error?.message).toMatch(/not signed/);
    expect((await changed.status()).error?.message).toMatch(/does not match/);
    expect(ran.length).toBe(before);
    const letters = await h.client().deadLetters.list("signed-no");
    expect(letters.map((l) => l.reason)).toEqual(expect.arrayContaining([expect.stringContaining("BAD_SIGNATURE")]));
    expect(letters).toHaveLength(3);
  });

  it("a worker without secrets runs signed tasks as any other", async () => {
    await h.worker({ queues: ["signed-any"], executor: recording });
    const handle = await h.client({ signingSecret: SECRET }).submit(scripted("a"), "x", { queue: "signed-any" });
    expect(await handle.result({ timeoutMs: 10_000 })).toBe('ran "x"');
  });

  it("the tasks a verifying worker creates itself (a schedule's ticks) are signed with its first secret", async () => {
    await h.worker({ queues: ["signed-schedule"], executor: recording, signingSecrets: [SECRET] });
    const client = h.client({ signingSecret: SECRET });
    await client.schedules.create({ id: "signed-tick", every: 1000, agent: scripted("a"), input: "tick", options: { queue: "signed-schedule" } });
    const task = await waitFor(async () => (await client.listTasks({ queue: "signed-schedule", status: "COMPLETED" })).tasks[0], { timeoutMs: 15_000 });
    expect(task.result).toBe('ran "tick"');
    await client.schedules.delete("signed-tick");
  });

  it("refuses a secret too short to be one", async () => {
    expect(() => h.client({ signingSecret: "short" })).toThrow(/signingSecret/);
    await expect(h.worker({ queues: ["signed-short"], signingSecrets: ["short"] })).rejects.toThrow(/signingSecrets/);
  });
});
