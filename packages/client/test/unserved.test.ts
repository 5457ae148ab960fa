// Following a task that no live worker serves (result(), stream()) says so once, through
// `onUnserved`, and keeps waiting: a worker that starts later runs it and the follow ends as usual.
// A queue a busy worker serves is not reported, and a task that starts within the grace costs the
// check nothing (no read of the fleet, no extra read of the task).
// @cluster: results and streams followed live (sharded Pub/Sub), the fleet's heartbeats read across slots

import net from "node:net";
import { onCluster, scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { type FlotillaEvent, UNSERVED_AFTER_MS, type UnservedNotice, ValidationError } from "../src/index.ts";

/** Every command the Redis at `url` runs from now on, as its words (MONITOR on a socket of its own). */
async function monitor(url: string): Promise<{ seen: string[][]; close(): void }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port || 6379), hostname);
  const seen: string[][] = [];
  let rest = "";
  let started = false;
  socket.setEncoding("utf8").on("data", (chunk: string) => {
    const lines = (rest + chunk).split("\r\n");
    rest = lines.pop()!;
    for (const line of lines) {
      if (line === "+OK") started = true;
      if (!line.startsWith("+") || line === "+OK") continue;
      seen.push([...line.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!));
    }
  });
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  socket.write("MONITOR\r\n");
  await waitFor(() => started, { timeoutMs: 5000, what: "MONITOR to start" });
  return { seen, close: () => socket.destroy() };
}

/** Reads a stream to its end in the background. */
function collect(events: AsyncIterable<FlotillaEvent>) {
  const seen: FlotillaEvent[] = [];
  const done = (async () => {
    for await (const e of events) seen.push(e);
  })();
  return { seen, done };
}

describe("following a task no worker serves", () => {
  const env = useFlotilla("unserved");

  it("result() and stream() say so once, and keep waiting until a worker runs it", async () => {
    const client = env.client();
    const id = await env.submit(scripted("lonely", { reply: "done at last" }), "x", { queue: "u-none" });
    const handle = client.handle(id);
    const fromResult: UnservedNotice[] = [];
    const fromStream: UnservedNotice[] = [];
    const result = handle.result({ onUnserved: (n) => fromResult.push(n) });
    const stream = collect(handle.stream({ onUnserved: (n) => fromStream.push(n) }));
    await waitFor(() => fromResult.length === 1 && fromStream.length === 1, { timeoutMs: 20_000, what: "both notices" });
    for (const notice of [fromResult[0], fromStream[0]]) {
      expect(notice).toEqual({ taskId: id, queue: "u-none", status: "PENDING", liveWorkers: 0, at: expect.any(Number) });
    }
    // Still following: a worker that starts now runs the task, and both follows end with it.
    await env.worker({ queues: ["u-none"] });
    await expect(result).resolves.toMatchObject({ text: "done at last" });
    await stream.done;
    expect(stream.seen.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(fromResult).toHaveLength(1);
    expect(fromStream).toHaveLength(1);
  });

  it("counts the live workers that serve other queues", async () => {
    await env.worker({ queues: ["u-other"] });
    const client = env.client();
    const id = await env.submit(scripted("lonely"), "x", { queue: "u-unwatched" });
    const notices: UnservedNotice[] = [];
    const controller = new AbortController();
    const waiting = client
      .handle(id)
      .result({ signal: controller.signal, onUnserved: (n) => notices.push(n) })
      .catch((e: unknown) => e);
    await waitFor(() => notices.length === 1, { timeoutMs: 20_000, what: "the notice" });
    expect(notices[0]).toMatchObject({ queue: "u-unwatched", liveWorkers: 1, status: "PENDING" });
    controller.abort(new Error("enough"));
    expect(await waiting).toMatchObject({ message: "enough" });
  });

  it("a queue a busy worker serves is not reported, though the task waits past the grace", async () => {
    await env.worker({ queues: ["u-busy"], concurrency: 1 });
    const client = env.client();
    // Holds the worker's one slot for about 2.5 graces, so the followed task waits past the check.
    const slowMs = Math.ceil((UNSERVED_AFTER_MS * 2.5) / 10);
    const slow = await env.submit(scripted("slow", { reply: "a b c d e f g h i j", tokenDelayMs: slowMs }), "x", { queue: "u-busy" });
    await env.until(slow, ["RUNNING"]);
    const id = await env.submit(scripted("next"), "x", { queue: "u-busy" });
    const notices: UnservedNotice[] = [];
    const handle = client.handle(id);
    const stream = collect(handle.stream({ onUnserved: (n) => notices.push(n) }));
    await handle.result({ onUnserved: (n) => notices.push(n) });
    await stream.done;
    // It waited behind the slow task, past the grace: the check ran and found the worker.
    const [slowRecord, record] = [await client.handle(slow).status(), await handle.status()];
    expect(record.startedAt! - record.createdAt).toBeGreaterThan(UNSERVED_AFTER_MS);
    expect(slowRecord.status).toBe("COMPLETED");
    expect(notices).toEqual([]);
  });

  it("an unknown option of result() or stream() is a ValidationError naming it", async () => {
    const handle = env.client().handle("u-none/nope");
    const err = (await handle.result({ onUnserve: () => {} } as never).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.message).toContain("onUnserve");
    expect(() => handle.stream({ onUnserved: "yes" } as never)).toThrow(/stream options: onUnserved: expected a function/);
  });

  // MONITOR shows one connection's node: a single Redis only.
  it.skipIf(onCluster())("a task that starts within the grace costs the check nothing: no fleet read, no extra read of the task", async () => {
    await env.worker({ queues: ["u-fast"], concurrency: 2 });
    const client = env.client();
    // Each runs past the grace (tokens keep the stream busy, so it never rechecks when quiet).
    const slow = scripted("steady", { reply: "a b c d e f g h i j k l", tokenDelayMs: Math.ceil((UNSERVED_AFTER_MS * 2) / 12) });
    const watching = await monitor(env.url);
    const seen = watching.seen;
    try {
      const plain = client.handle(await env.submit(slow, "x", { queue: "u-fast" }));
      const checked = client.handle(await env.submit(slow, "x", { queue: "u-fast" }));
      const notices: UnservedNotice[] = [];
      const a = collect(plain.stream());
      const b = collect(checked.stream({ onUnserved: (n) => notices.push(n) }));
      await Promise.all([a.done, b.done]);
      const during = [...seen];
      // The follow outlasted the grace, so the check's timer did fire (and found it served).
      const record = await checked.status();
      expect(record.completedAt! - record.createdAt).toBeGreaterThan(UNSERVED_AFTER_MS);
      // Commands from connections show as sent (ioredis: lower case); those of scripts (HMGET) in capitals.
      const reads = (taskId: string) => during.filter((args) => args[0] === "hmget" && args[1] === env.keys.task(taskId)).length;
      expect(reads(checked.taskId)).toBe(reads(plain.taskId));
      expect(during.filter((args) => args[0]?.toLowerCase() === "zrange" && args[1] === env.keys.workers())).toEqual([]);
      expect(notices).toEqual([]);
    } finally {
      watching.close();
    }
  });
});
