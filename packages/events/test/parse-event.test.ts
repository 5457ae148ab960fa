import { ConnectionError, CorruptRecordError, createKeys, DEFAULT_RETENTION } from "@flotilla/core";
import { TestTaskStore } from "@flotilla/store/testing";
import { startRedisServer, testPrefix, testRedis } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { parseEvent, readEvents } from "../src/event-stream.ts";

const text = { taskId: "q/t", seq: 1, attempt: 0, ts: 5, agent: "a", type: "text", delta: "hi" };

describe("parseEvent", () => {
  it("takes a well-formed text event as it is, without a copy", () => {
    expect(parseEvent(text, "q/t")).toBe(text);
  });

  it("reads any other event through the schema", () => {
    const step = { ...text, type: "step", index: 0, finishReason: "stop", delta: undefined };
    expect(parseEvent(step, "q/t")).toMatchObject({ type: "step", index: 0 });
    // A text event with a key too many is read by the schema, which drops the key.
    const extra = { ...text, extra: 1 };
    const parsed = parseEvent(extra, "q/t");
    expect(parsed).not.toBe(extra);
    expect(parsed).toEqual(text);
  });

  it.each([
    ["a delta that is not a string", { delta: 1 }],
    ["a task id that is not a string", { taskId: 1 }],
    ["an agent that is not a string", { agent: null }],
    ["a fractional seq", { seq: 1.5 }],
    ["a seq of 0", { seq: 0 }],
    ["a fractional attempt", { attempt: 0.5 }],
    ["a negative attempt", { attempt: -1 }],
    ["a ts that is not a number", { ts: "5" }],
    ["an infinite ts", { ts: Number.POSITIVE_INFINITY }],
    ["another type's shape", { type: "tool_call" }],
  ])("refuses a text event with %s, naming the task", (_, change) => {
    expect(() => parseEvent({ ...text, ...change }, "q/bad")).toThrow(CorruptRecordError);
    expect(() => parseEvent({ ...text, ...change }, "q/bad")).toThrow(/q\/bad/);
  });

  it("refuses what is not an object", () => {
    for (const raw of [null, "text", 1]) expect(() => parseEvent(raw, "q/bad")).toThrow(CorruptRecordError);
  });
});

describe("readEvents", () => {
  it("rides out Redis being down for a moment", async () => {
    const server = await startRedisServer({ aof: true });
    const redis = testRedis(server.url);
    const keys = createKeys(testPrefix("parse-event"));
    const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
    try {
      await store.create({ taskId: "q/down", queue: "q", agent: "a", payload: "{}", createdAt: Date.now(), detailed: false, maxRetries: 0, metadata: {} });
      await server.down();
      const read = readEvents(redis, keys, "q/down");
      // Longer than the connection's own retries (testRedis: 3), so a read fails and is tried again.
      await new Promise((r) => setTimeout(r, 1500));
      await server.up();
      expect(await read).toMatchObject({ exists: true, terminal: false });
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });

  it("gives up at once when its signal is aborted", async () => {
    const server = await startRedisServer({ aof: false });
    const redis = testRedis(server.url);
    const keys = createKeys(testPrefix("parse-event"));
    try {
      await redis.ping();
      await server.down();
      const controller = new AbortController();
      controller.abort();
      await expect(readEvents(redis, keys, "q/x", { signal: controller.signal })).rejects.toBeInstanceOf(ConnectionError);
    } finally {
      redis.disconnect();
      await server.stop();
    }
  });
});
