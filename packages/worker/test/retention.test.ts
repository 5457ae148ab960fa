// Retention by count through a real worker: a queue that keeps its latest 1,000 completed tasks
// holds about that many records however many ran; its failed tasks follow their own rule.
import { UnrecoverableError } from "@flotilla/core";
import { echo, scanPrefix, scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

describe("retention by count (queueRetention)", () => {
  const env = useFlotilla("retention-count");

  it("10,000 tasks with keepCompleted { count: 1000 } leave 1,000 completed records, and every failed one", async () => {
    const worker = await env.worker({
      queues: ["kept"],
      concurrency: 50,
      queueRetention: { kept: { keepCompleted: { count: 1000 } } },
      executor: {
        execute: async (ctx) => {
          if ((ctx.input as number) % 100 === 0) throw new UnrecoverableError("fails on purpose");
          return "ok";
        },
      },
    });
    let ended = 0;
    worker.on("task:ended", () => void ended++);
    const client = env.client();
    for (let from = 0; from < 10_000; from += 500) {
      await client.submitMany(Array.from({ length: 500 }, (_, i) => ({ agent: echo(), input: from + i + 1, options: { queue: "kept" } })));
    }
    await waitFor(() => ended >= 10_000, { timeoutMs: 100_000, what: "every task to end" });
    let records = 0;
    // The queue's records: every key under its task key base (which ends with the ":" scanPrefix adds).
    for await (const found of scanPrefix(env.redis, env.keys.taskBase("kept").slice(0, -1))) records += found.length;
    expect(await env.redis.zcard(env.keys.kept("kept", "completed"))).toBe(1000);
    // 1,000 completed and the 100 failed ones (no count for them): exactly, once the last settle trimmed.
    expect(records).toBe(1100);
    expect(await env.redis.zcard(env.keys.taskIndex("kept"))).toBe(1100);
  }, 120_000);

  it('events: "until-end": a finished task replays its status events and result, its tokens are gone with its stream', async () => {
    await env.worker({ queues: ["brief"], retention: { events: "until-end" } });
    const client = env.client();
    const handle = await client.submit(scripted("talker", { reply: "one two three" }), "go", { queue: "brief", detailed: true });
    expect(await handle.result()).toMatchObject({ text: "one two three" });
    expect(await env.redis.exists(env.keys.events(handle.taskId))).toBe(0);
    const replayed = [];
    for await (const e of handle.stream()) replayed.push(e.type === "status" ? `status:${e.status}` : e.type);
    expect(replayed).toEqual(["status:running", "status:completed"]);
    expect(await handle.status()).toMatchObject({ status: "COMPLETED", result: { text: "one two three" } });
  });

  it("a queue's own retention reaches its running tasks' events too (runningEventTtlMs)", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    await env.worker({
      queues: ["short-lived", "long-lived"],
      queueRetention: { "short-lived": { runningEventTtlMs: 60_000 } },
      executor: {
        execute: async (ctx) => {
          ctx.emit({ type: "text", delta: "working" });
          await gate;
          return "ok";
        },
      },
    });
    const short = await env.submit(echo(), 1, { queue: "short-lived" });
    const long = await env.submit(echo(), 2, { queue: "long-lived" });
    const ttl = (taskId: string) => env.redis.pttl(env.keys.events(taskId));
    await waitFor(async () => (await ttl(short)) > 0 && (await ttl(long)) > 0, { what: "both tasks' first events" });
    expect(await ttl(short)).toBeLessThanOrEqual(60_000);
    expect(await ttl(short)).toBeGreaterThan(30_000);
    expect(await ttl(long)).toBeGreaterThan(60_000);
    release();
    for (const id of [short, long]) expect((await env.until(id)).status).toBe("COMPLETED");
  });
});
