// @cluster: a message waits in the task's own slot (its inbox) and the worker takes it at a turn boundary
// Steering a running agent: handle.send(message) joins the conversation at the next turn boundary,
// where the stream shows a user-message event; a turn with no message waiting asks Redis nothing.
import { Agent, defineTool } from "@flotilla/agent";
import { createKeys, ErrorCodes } from "@flotilla/core";
import { collect, startOpenAIServer, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { NotRunningError, TaskNotFoundError, ValidationError } from "../src/index.ts";

const server = await startOpenAIServer();
afterAll(() => server.close());

/** A tool the test lets finish: it runs until `release()`. */
let release: () => void = () => {};
let entered: () => void = () => {};
const hold = defineTool({
  name: "hold",
  description: "Waits for the test",
  inputSchema: z.object({}),
  execute: async () => {
    entered();
    await new Promise<void>((r) => (release = r));
    return "held";
  },
});
const agent = new Agent({ name: "steered", model: "local:m", tools: ["hold"] });
/** The user messages a request to the model carried. */
const userContents = (i: number) => server.requests[i]!.body.messages.filter((m) => m.role === "user").map((m) => m.content);

describe("handle.send: messages into a running agent", () => {
  const env = useFlotilla("steering");
  const keys = () => createKeys(env.prefix);

  it("a message sent during a tool call joins after it: the next turn sees it, the stream shows where", async () => {
    await env.worker({ openAICompatible: { local: { baseURL: server.baseURL } }, tools: { hold } });
    const first = server.requests.length;
    server.reply({ toolCalls: [{ id: "call_1", name: "hold", args: {} }] }, { text: "checked the weekend too" });
    const inTool = new Promise<void>((r) => (entered = r));
    const handle = await env.client().submit(agent, "plan my week", { detailed: true });
    await inTool;
    // No message waited at the boundaries so far: nothing was taken (a take marks the record).
    expect(await env.redis.hget(keys().task(handle.taskId), "lastTake")).toBeNull();
    const sent = await handle.send("also check the weekend");
    expect(sent).toMatchObject({ messageId: expect.any(String), waiting: 1 });
    release();
    expect(await handle.result()).toMatchObject({ text: "checked the weekend too" });
    // The second turn saw the input, then the message, after the tool's result.
    expect(userContents(first + 1)).toEqual(["plan my week", "also check the weekend"]);
    const roles = server.requests[first + 1]!.body.messages.map((m) => m.role);
    expect(roles.indexOf("tool")).toBeLessThan(roles.lastIndexOf("user"));
    const events = await collect(handle.stream());
    const types = events.map((e) => e.type).filter((t, i, a) => t !== "text" || a[i - 1] !== "text");
    expect(types).toEqual(["status", "tool_call", "step", "tool_result", "user-message", "text", "step", "usage", "status"]);
    expect(events.find((e) => e.type === "user-message")).toMatchObject({ messageId: sent.messageId, content: "also check the weekend" });
    expect(await env.redis.exists(keys().inbox(handle.taskId))).toBe(0);
  });

  it("a message sent during the final answer gets one more turn; one sent before the start joins the first", async () => {
    await env.worker({ openAICompatible: { local: { baseURL: server.baseURL } }, tools: { hold } });
    const first = server.requests.length;
    // The first answer streams slowly: the message comes while it does.
    server.reply({ text: "Monday: gym. Tuesday: read.", chunkSize: 2, delayMs: 40 }, { text: "Wednesday: swim." });
    const handle = await env.client().submit(new Agent({ name: "planner", model: "local:m" }), "plan", { detailed: true });
    await waitFor(() => server.requests.length > first, { what: "the first turn to start" });
    await handle.send("and Wednesday?");
    expect(await handle.result()).toMatchObject({ text: "Wednesday: swim." });
    expect(server.requests.length - first).toBe(2);
    expect(userContents(first + 1)).toEqual(["plan", "and Wednesday?"]);

    // Sent while it waits in its queue (no worker serves it yet): the first turn sees it.
    const early = await env.client().submit(new Agent({ name: "planner", model: "local:m" }), "plan", { queue: "steer-later" });
    await early.send("keep it short");
    const at = server.requests.length;
    server.reply({ text: "short plan" });
    await env.worker({ queues: ["steer-later"], openAICompatible: { local: { baseURL: server.baseURL } } });
    expect(await early.result()).toMatchObject({ text: "short plan" });
    expect(userContents(at)).toEqual(["plan", "keep it short"]);
  });

  it("refuses a message to a task that has ended (NOT_RUNNING), that does not exist, or that is empty; nothing written", async () => {
    await env.worker({ openAICompatible: { local: { baseURL: server.baseURL } }, tools: { hold } });
    server.reply({ text: "done" });
    const handle = await env.client().submit(new Agent({ name: "planner", model: "local:m" }), "plan");
    await handle.result();
    const late = await handle.send("too late").catch((e: unknown) => e);
    expect(late).toBeInstanceOf(NotRunningError);
    expect(late).toMatchObject({ code: ErrorCodes.NOT_RUNNING, status: "COMPLETED" });
    expect(await env.redis.exists(keys().inbox(handle.taskId))).toBe(0);
    await expect(env.client().handle("default/nope").send("hello")).rejects.toBeInstanceOf(TaskNotFoundError);
    await expect(handle.send("")).rejects.toBeInstanceOf(ValidationError);
    await expect(handle.send(42 as never)).rejects.toBeInstanceOf(ValidationError);
  });
});
