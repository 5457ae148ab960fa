// @cluster: one call submits to several queues: grouped per slot
import { echo } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { DuplicateTaskError, ValidationError } from "../src/index.ts";

describe("submitMany", () => {
  const env = useFlotilla("bulk");

  it("submits many tasks at once; every one runs", async () => {
    const client = env.client();
    await env.worker({ queues: ["bulk"], concurrency: 16 });
    const handles = await client.submitMany(
      Array.from({ length: 500 }, (_, i) => ({ agent: echo(), input: `n${i}`, options: { queue: "bulk", priority: i % 2 ? "high" : "low" } as const })),
    );
    expect(handles).toHaveLength(500);
    const results = await Promise.all(handles.map((h) => h.result({ timeoutMs: 20_000 })));
    expect(results.map((r) => (r as { text: string }).text)).toEqual(handles.map((_, i) => `Echo: n${i}`));
  });

  it("rejects the whole batch, writing nothing, when one item is invalid", async () => {
    const client = env.client();
    const err = await client
      .submitMany([
        { agent: echo(), input: "ok", options: { queue: "strict" } },
        { agent: echo(), input: "bad", options: { queue: "no{braces}" } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ValidationError);
    expect((err as ValidationError).field).toBe("items.1.queue");
    expect(await env.redis.exists(`${env.prefix}:queue:{strict}`)).toBe(0);
  });

  it("enqueues the new ones and reports taken ids", async () => {
    const client = env.client();
    await client.submit(echo(), "first", { queue: "dupes", taskId: "taken" });
    const err = await client
      .submitMany([
        { agent: echo(), input: "a", options: { queue: "dupes", taskId: "fresh-1" } },
        { agent: echo(), input: "b", options: { queue: "dupes", taskId: "taken" } },
      ])
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DuplicateTaskError);
    expect((err as DuplicateTaskError).details).toMatchObject({ taken: ["dupes/taken"] });
    expect(await env.redis.xlen(`${env.prefix}:queue:{dupes}`)).toBe(2);
  });
});
