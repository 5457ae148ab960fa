// @cluster: a live reader's gap filled from the stream, through sharded Pub/Sub
// handle.stream() following a task live when one Pub/Sub message is lost on the way to the client:
// the event was written by the worker (to the task's event stream, or a status to its record) and
// announced, but the client's subscriber connection never hands the message on. The next live
// event then skips a seq, and the reader must read the missing one back before handing that event
// out: every seq once, in order, as stored. The client-level guard of the gap fill in
// @flotilla/events' streamEvents (packages/events/test/stream-live.test.ts drives it directly).
// client.watch() is not covered here: it is the fleet's feed of lifecycle changes, not a task's
// events by seq, and has no gap to fill.
import type { JsonValue } from "@flotilla/core";
import type { SubscriberHub } from "@flotilla/core/redis";
import type { FlotillaEvent } from "@flotilla/events";
import { collect, scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { ExecutionContext, Executor } from "@flotilla/worker";
import { describe, expect, it } from "vitest";
import type { FlotillaClient } from "../src/index.ts";

type Listener = (channel: string, message: string) => void;

/**
 * The client's subscriber connection, made lossy: every message every stream of the client hears
 * passes through here (the one `smessage` listener of its SubscriberHub), and `loseNext` has the
 * next message of a channel that `pick` chooses dropped, as a network hiccup would, once. The
 * worker's write and announcement are left as they are: the event is in Redis, only the message
 * never reaches the reader.
 */
async function lossyLine(client: FlotillaClient) {
  // The client opens one hub, on first use, and every stream() of the client shares it.
  const hub = await (client as unknown as { hub(): Promise<SubscriberHub> }).hub();
  const conn = hub.redis;
  const listeners = conn.listeners("smessage") as Listener[];
  expect(listeners).toHaveLength(1);
  conn.removeAllListeners("smessage");
  let rule: { channel: string; pick: (batch: FlotillaEvent[]) => boolean } | undefined;
  const lost: Array<{ channel: string; batch: FlotillaEvent[] }> = [];
  const passed: Array<{ channel: string; batch: FlotillaEvent[] }> = [];
  conn.on("smessage", (channel: string, message: string) => {
    const batch = JSON.parse(message) as FlotillaEvent[];
    if (rule && channel === rule.channel && rule.pick(batch)) {
      rule = undefined;
      lost.push({ channel, batch });
      return;
    }
    passed.push({ channel, batch });
    for (const listener of listeners) listener(channel, message);
  });
  return {
    lost,
    /** Drops the next message on `channel` whose events `pick` chooses. */
    loseNext(channel: string, pick: (batch: FlotillaEvent[]) => boolean) {
      rule = { channel, pick };
    },
    /** Resolves once a message on `channel` with an event `pick` chooses was handed to the client. */
    delivered(channel: string, pick: (event: FlotillaEvent) => boolean, what: string) {
      return waitFor(() => passed.some((m) => m.channel === channel && m.batch.some(pick)), { what });
    },
  };
}

/**
 * An executor whose attempts run until the test ends them, emitting what the test tells them when
 * it tells them: each emit is its own batch (one stream entry, one message) when the test waits for
 * it to arrive before the next.
 */
function heldTasks() {
  type Run = { emit: ExecutionContext["emit"]; finish: (result: JsonValue) => void; fail: (err: Error) => void };
  const running = new Map<string, Run>();
  const executor: Executor = {
    execute: (ctx) =>
      new Promise<JsonValue>((resolve, reject) => {
        ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason), { once: true });
        running.set(`${ctx.taskId}#${ctx.attempt}`, { emit: (event) => ctx.emit(event), finish: resolve, fail: reject });
      }),
  };
  const started = (taskId: string, attempt = 1) =>
    waitFor(() => running.get(`${taskId}#${attempt}`), { what: `the executor to run attempt ${attempt} of ${taskId}` });
  return { executor, started };
}

async function next(stream: AsyncGenerator<FlotillaEvent, void, undefined>): Promise<FlotillaEvent> {
  const r = await stream.next();
  if (r.done) throw new Error("the stream ended early");
  return r.value;
}

const isText = (delta: string) => (e: FlotillaEvent) => e.type === "text" && e.delta === delta;
const isStatus = (taskId: string, status: string) => (e: FlotillaEvent) => e.type === "status" && e.taskId === taskId && e.status === status;
const texts = (events: FlotillaEvent[]) => events.flatMap((e) => (e.type === "text" ? [e.delta] : []));

describe("handle.stream() with a live message lost", () => {
  const env = useFlotilla("gap-fill");
  const tasks = heldTasks();

  /** Every seq once and in order, each event as the store keeps it. */
  async function expectWhole(seen: FlotillaEvent[], taskId: string) {
    expect(seen.map((e) => e.seq)).toEqual(seen.map((_, i) => i + 1));
    expect(seen).toEqual(await env.events(taskId));
    expect(seen.at(-1)).toMatchObject({ type: "status", status: "completed", result: { text: "done" } });
  }

  it("reads a text event whose message was lost from the task's event stream before handing out the next", async () => {
    const queue = "gap-text";
    await env.worker({ queues: [queue], executor: tasks.executor });
    const client = env.client();
    const line = await lossyLine(client);
    const handle = await client.submit(scripted("gap"), "in", { queue, detailed: true });
    const run = await tasks.started(handle.taskId);
    const channel = env.keys.eventsChannel(handle.taskId);

    const stream = handle.stream();
    // Replayed: the task's status events, up to `running`. The replay is read whole before its first
    // event is handed out, so what the task emits from now on reaches the reader live.
    const seen: FlotillaEvent[] = [];
    while (!seen.some(isStatus(handle.taskId, "running"))) seen.push(await next(stream));
    run.emit({ type: "text", delta: "a" });
    const a = await next(stream);
    expect(a).toMatchObject({ type: "text", delta: "a" });
    seen.push(a);

    // b: written and announced by the worker, its message lost on the client's connection.
    line.loseNext(channel, (batch) => batch.some(isText("b")));
    run.emit({ type: "text", delta: "b" });
    await waitFor(() => line.lost.length === 1, { what: "b's message to be lost" });
    expect(line.lost[0]!.batch).toMatchObject([{ type: "text", delta: "b", seq: a.seq + 1 }]);
    // c comes live, two seqs past a. The reader is held at a until c is in (nothing asks it for more,
    // so its quiet-time re-read is not running either): only filling the gap can give it b.
    run.emit({ type: "text", delta: "c" });
    await line.delivered(channel, isText("c"), "c's message to reach the client");
    run.finish({ text: "done" });

    const rest = await collect(stream);
    expect(texts(rest), "b, its message lost, read from the stream before c").toEqual(["b", "c"]);
    expect(rest[0]).toMatchObject({ type: "text", delta: "b", seq: a.seq + 1 });
    seen.push(...rest);
    await expectWhole(seen, handle.taskId);
    expect(line.lost).toHaveLength(1);
    expect(await handle.result()).toEqual({ text: "done" });
  });

  it("reads a status event whose message was lost from the task's record before handing out the next", async () => {
    const queue = "gap-status";
    await env.worker({ queues: [queue], executor: tasks.executor });
    const client = env.client();
    const line = await lossyLine(client);
    const handle = await client.submit(scripted("gap"), "in", { queue, detailed: true, maxRetries: 1, backoff: { delayMs: 0 } });
    const first = await tasks.started(handle.taskId, 1);
    const channel = env.keys.statusChannel(queue);

    const stream = handle.stream();
    const seen: FlotillaEvent[] = [];
    while (!seen.some(isStatus(handle.taskId, "running"))) seen.push(await next(stream));
    first.emit({ type: "text", delta: "a" });
    seen.push(await next(stream));
    expect(seen.at(-1)).toMatchObject({ type: "text", delta: "a" });

    // The first attempt fails: its `retrying` (on the queue's status channel) is lost on the client's connection.
    line.loseNext(channel, (batch) => batch.some(isStatus(handle.taskId, "retrying")));
    first.fail(new Error("once"));
    await waitFor(() => line.lost.length === 1, { what: "retrying's message to be lost" });
    // The second attempt's `running` comes live, a seq past the one lost; the reader waits at a.
    const second = await tasks.started(handle.taskId, 2);
    await line.delivered(channel, (e) => isStatus(handle.taskId, "running")(e) && e.attempt === 2, "the second running's message to reach the client");
    second.finish({ text: "done" });

    // The attempt's `error` event came live on the task's channel before its retrying was lost.
    const rest = await collect(stream);
    const told = rest.map((e) => (e.type === "status" ? `${e.status}#${e.attempt}` : e.type));
    expect(told, "retrying, its message lost, read from the record before the second running").toEqual(["error", "retrying#1", "running#2", "completed#2"]);
    expect(rest[1]).toMatchObject({ seq: rest[0]!.seq + 1, error: { message: expect.stringContaining("once") } });
    seen.push(...rest);
    await expectWhole(seen, handle.taskId);
    expect(line.lost).toHaveLength(1);
    expect(line.lost[0]!.batch.find(isStatus(handle.taskId, "retrying"))).toEqual(rest[1]);
  });
});
