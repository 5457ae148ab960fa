import { CorruptRecordError, ErrorCodes, type JsonValue, ValidationError } from "@flotilla/core";
import { echo, keysUnder, testConnection } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { FlotillaClient } from "../src/index.ts";

// What submit does with the options around the input: size limit, delays, caller-chosen ids.
describe("submit options", () => {
  const h = useFlotilla("submit-options");

  it("takes a payload of exactly maxPayloadBytes, and refuses one byte more", async () => {
    const agent = echo();
    const empty = JSON.stringify({ agent: agent.toJSON(), input: "" }).length;
    const client = new FlotillaClient({ redis: testConnection(), prefix: h.prefix, maxPayloadBytes: empty + 100 });
    await expect(client.submit(agent, "x".repeat(100))).resolves.toBeDefined();
    const err = await client.submit(agent, "x".repeat(101)).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ field: "input" });
    await client.close();
  });

  it("refuses input, metadata or an agent nested deeper than maxJsonDepth with a ValidationError, writing nothing", async () => {
    let deep: JsonValue = 1;
    for (let i = 0; i < 5000; i++) deep = { a: deep };
    const keysNow = () => keysUnder(h.redis, h.prefix);
    const client = h.client();
    await client.submit(echo(), "warm-up"); // whatever a first submit writes once
    const before = await keysNow();
    const refusals = await Promise.all([
      client.submit(echo(), deep).catch((e: unknown) => e),
      client.submit(echo(), "x", { metadata: { deep } }).catch((e: unknown) => e),
      client.submit({ ...echo().toJSON(), options: { deep } }, "x").catch((e: unknown) => e),
      client
        .submitMany([
          { agent: echo(), input: "fine" },
          { agent: echo(), input: deep },
        ])
        .catch((e: unknown) => e),
    ]);
    for (const [err, field] of refusals.map((e, i) => [e, ["input", "metadata", "agent", "items.1.input"][i]] as const)) {
      expect(err).toBeInstanceOf(ValidationError);
      expect(err).toMatchObject({ code: ErrorCodes.VALIDATION, field });
      expect((err as Error).message).toMatch(/nested deeper than 128 levels/);
    }
    expect(await keysNow()).toEqual(before);
    // The limit is the client's to set: 10 levels of metadata pass at 10, not at 9.
    let metadata: JsonValue = 1;
    for (let i = 0; i < 10; i++) metadata = { m: metadata };
    await expect(h.client({ maxJsonDepth: 10 }).submit(echo(), "x", { metadata: metadata as Record<string, JsonValue> })).resolves.toBeDefined();
    await expect(h.client({ maxJsonDepth: 9 }).submit(echo(), "x", { metadata: metadata as Record<string, JsonValue> })).rejects.toMatchObject({
      code: ErrorCodes.VALIDATION,
      field: "metadata",
    });
  });

  it("delays a task by delayMs from its submit, or to runAt", async () => {
    const client = h.client();
    const delayed = await (await client.submit(echo(), "x", { queue: "later", delayMs: 60_000 })).status();
    expect(delayed.runAt! - delayed.createdAt).toBe(60_000);
    // runAt travels as a delay from the submit (the due time is set on Redis's clock): the same
    // instant, give or take the submit's own round trip.
    const at = Date.now() + 120_000;
    const runAt = (await (await client.submit(echo(), "x", { queue: "later", runAt: at })).status()).runAt!;
    expect(Math.abs(runAt - at)).toBeLessThan(1000);
    expect((await (await client.submit(echo(), "x", { queue: "later" })).status()).runAt).toBeUndefined();
  });

  it("takes a caller's id as a name or as <queue>/<name> of the queue it is submitted to", async () => {
    const client = h.client();
    expect((await client.submit(echo(), "x", { queue: "named", taskId: "mine" })).taskId).toBe("named/mine");
    expect((await client.submit(echo(), "x", { queue: "named", taskId: "named/also-mine" })).taskId).toBe("named/also-mine");
    await expect(client.submit(echo(), "x", { queue: "named", taskId: "other/mine" })).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, field: "taskId" });
  });

  it("refuses an idempotency key in submitMany, naming the item", async () => {
    const err = await h
      .client()
      .submitMany([
        { agent: echo(), input: "a" },
        { agent: echo(), input: "b", options: { idempotencyKey: "k" } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ field: "items.1.idempotencyKey" });
  });

  it("reads the depth of the default queue unless told another, and refuses a bad queue name", async () => {
    const client = h.client();
    const before = (await client.fleet.queueDepth()).waiting;
    await client.submit(echo(), "x");
    expect(await client.fleet.queueDepth()).toMatchObject({ waiting: before + 1 });
    expect(await client.fleet.queueDepth("empty")).toMatchObject({ waiting: 0 });
    await expect(client.fleet.queueDepth("no spaces")).rejects.toMatchObject({ code: ErrorCodes.VALIDATION, field: "queue" });
  });

  it("fails a result wait on a record it cannot read, instead of waiting on", async () => {
    const handle = await h.client().submit(echo(), "x", { queue: "corrupt" });
    await h.redis.hset(h.keys.task(handle.taskId), "status", "BOGUS");
    await expect(handle.result({ timeoutMs: 10_000 })).rejects.toBeInstanceOf(CorruptRecordError);
  });

  it("an option that belongs elsewhere is a ValidationError naming it and where it goes; an unknown one by name; nothing is written", async () => {
    const client = h.client();
    const misplaced = await client.submit(echo(), "x", { queue: "misplaced", rateLimit: "openai" } as never).catch((e: unknown) => e);
    expect(misplaced).toBeInstanceOf(ValidationError);
    expect(misplaced).toMatchObject({ field: "rateLimit" });
    expect((misplaced as Error).message).toBe(
      "invalid options: rateLimit: a rate limit is the agent's, not a submit's: new Agent({ rateLimit: \"<name>\" }), drawing from a limit the workers define (rateLimits)",
    );
    const unknown = await client.submit(echo(), "x", { queue: "misplaced", prority: "high" } as never).catch((e: unknown) => e);
    expect((unknown as Error).message).toBe("invalid options: prority: unknown key");
    expect(await keysUnder(h.redis, `${h.prefix}:queue:{misplaced}`)).toEqual([]);
  });
});
