// Following a task over HTTP, as a non-Node caller would: submit, read its Server-Sent Events to the
// end, fetch its result; resume a dropped stream with Last-Event-ID; heartbeats on an idle stream.
// @cluster: a task followed over SSE: the gateway's sharded subscriptions on the task's slot
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { jsonHeaders, type SseMessage, sseMessages, submitBody, taskPath, useGateway } from "./support.ts";

describe("gateway event streams", () => {
  const env = useFlotilla("gateway-events");
  const gateways = useGateway(env);

  async function submit(url: string, body: string): Promise<string> {
    const res = await fetch(`${url}/v1/tasks`, { method: "POST", headers: jsonHeaders(), body });
    expect(res.status).toBe(201);
    return ((await res.json()) as { taskId: string }).taskId;
  }

  it("submit -> SSE stream to the terminal event -> result", async () => {
    const { url } = await gateways.start();
    await env.worker({ queues: ["ev-flow"] });
    const taskId = await submit(url, submitBody(scripted("flow"), "hello there", { queue: "ev-flow" }));

    const res = await fetch(`${url}${taskPath(taskId, "/events")}`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const events: SseMessage[] = [];
    // The stream ends by itself after the terminal status event: this loop ends with it.
    for await (const m of sseMessages(res)) if (m.event) events.push(m);

    const parsed = events.map((m) => JSON.parse(m.data!) as { seq: number; type: string; delta?: string; status?: string });
    expect(events.map((m) => Number(m.id))).toEqual(parsed.map((e) => e.seq));
    expect(events.map((m) => m.event)).toEqual(parsed.map((e) => e.type));
    expect(parsed.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(
      parsed
        .filter((e) => e.type === "text")
        .map((e) => e.delta)
        .join(""),
    ).toBe("Echo: hello there");

    const result = await fetch(`${url}${taskPath(taskId, "/result")}`);
    expect(result.status).toBe(200);
    expect(await result.json()).toMatchObject({ taskId, status: "COMPLETED", result: { text: "Echo: hello there" } });
  });

  it("resumes a dropped stream from Last-Event-ID with no gap and no duplicate", async () => {
    const { url } = await gateways.start();
    await env.worker({ queues: ["ev-resume"] });
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(" ");
    const taskId = await submit(url, submitBody(scripted("slow", { tokenDelayMs: 30 }), words, { queue: "ev-resume" }));

    const first = new AbortController();
    const res = await fetch(`${url}${taskPath(taskId, "/events")}`, { signal: first.signal });
    const before: number[] = [];
    for await (const m of sseMessages(res)) {
      if (m.id) before.push(Number(m.id));
      if (before.length === 4) break;
    }
    // The connection drops mid-stream; the task goes on meanwhile.
    first.abort();
    const lastId = before.at(-1)!;
    expect(lastId).toBeGreaterThan(0);

    const resumed = await fetch(`${url}${taskPath(taskId, "/events")}`, { headers: { "Last-Event-ID": String(lastId) } });
    expect(resumed.status).toBe(200);
    const after: number[] = [];
    let last: { type: string; status?: string } | undefined;
    for await (const m of sseMessages(resumed)) {
      if (!m.id) continue;
      after.push(Number(m.id));
      last = JSON.parse(m.data!);
    }
    expect(last).toMatchObject({ type: "status", status: "completed" });
    expect(after[0]).toBe(lastId + 1);
    const all = [...before, ...after];
    expect(new Set(all).size).toBe(all.length);
    const stored = (await env.events(taskId)).map((e) => e.seq);
    expect(all).toEqual(stored);
    expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1));
  });

  it("?after= resumes too, and Last-Event-ID wins over it", async () => {
    const { url } = await gateways.start();
    await env.worker({ queues: ["ev-after"] });
    const taskId = await submit(url, submitBody(scripted("after"), "a b c", { queue: "ev-after" }));
    await env.until(taskId);
    const ids = async (init: RequestInit, query = "") => {
      const out: number[] = [];
      for await (const m of sseMessages(await fetch(`${url}${taskPath(taskId, `/events${query}`)}`, init))) if (m.id) out.push(Number(m.id));
      return out;
    };
    const all = await ids({});
    expect(all.length).toBeGreaterThan(3);
    expect(await ids({}, "?after=2")).toEqual(all.slice(2));
    expect(await ids({ headers: { "Last-Event-ID": "3" } }, "?after=1")).toEqual(all.slice(3));
  });

  it("sends `: ping` comment lines while a task is idle, and counts the open stream", async () => {
    const { url } = await gateways.start({ heartbeatMs: 100 });
    // No worker serves this queue: the task stays PENDING and its stream idle.
    const taskId = await submit(url, submitBody(scripted("idle"), "wait", { queue: "ev-idle" }));
    const controller = new AbortController();
    const res = await fetch(`${url}${taskPath(taskId, "/events")}`, { signal: controller.signal });
    const seen: SseMessage[] = [];
    for await (const m of sseMessages(res)) {
      seen.push(m);
      if (seen.filter((s) => s.comment === "ping").length === 2) break;
    }
    expect(seen.some((m) => m.event)).toBe(false);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toMatch(/^flotilla_gateway_sse_streams_open 1$/m);
    controller.abort();
    await waitFor(async () => /^flotilla_gateway_sse_streams_open 0$/m.test(await (await fetch(`${url}/metrics`)).text()), {
      what: "the dropped stream to be closed",
    });
  });

  it("an unknown task's stream is a 404 with a JSON error, not an empty stream", async () => {
    const { url } = await gateways.start();
    const res = await fetch(`${url}${taskPath("ev-none/nope", "/events")}`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "TASK_NOT_FOUND" } });
  });
});
