import { echo } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { DuplicateTaskError } from "../src/index.ts";

describe("idempotency keys", () => {
  const env = useFlotilla("idem");
  const entries = (queue: string) => env.redis.xlen(`${env.prefix}:queue:{${queue}}`);

  it("returns the first task's handle for a second submit with the same key, and enqueues once", async () => {
    const client = env.client();
    const first = await client.submit(echo(), "charge card 42", { queue: "idem", idempotencyKey: "order-42" });
    const again = await client.submit(echo(), "charge card 42", { queue: "idem", idempotencyKey: "order-42" });
    expect(again.taskId).toBe(first.taskId);
    const other = await client.submit(echo(), "charge card 43", { queue: "idem", idempotencyKey: "order-43" });
    expect(other.taskId).not.toBe(first.taskId);
    expect(await entries("idem")).toBe(2);
  });

  it("holds under concurrent submits from several clients", async () => {
    const clients = [env.client(), env.client(), env.client()];
    const handles = await Promise.all(
      Array.from({ length: 30 }, (_, i) => clients[i % 3]!.submit(echo(), "once", { queue: "race", idempotencyKey: "same-key" })),
    );
    expect(new Set(handles.map((h) => h.taskId)).size).toBe(1);
    expect(await entries("race")).toBe(1);
  });

  it("lets the key be used again once its window has passed", async () => {
    const client = env.client();
    const first = await client.submit(echo(), "x", { queue: "window", idempotencyKey: "short", idempotencyWindowMs: 100 });
    await new Promise((r) => setTimeout(r, 150));
    const later = await client.submit(echo(), "x", { queue: "window", idempotencyKey: "short", idempotencyWindowMs: 100 });
    expect(later.taskId).not.toBe(first.taskId);
  });

  it("releases the key when the submit it guarded failed", async () => {
    const client = env.client();
    await client.submit(echo(), "x", { queue: "rel", taskId: "taken-id" });
    await expect(client.submit(echo(), "x", { queue: "rel", taskId: "taken-id", idempotencyKey: "k" })).rejects.toBeInstanceOf(DuplicateTaskError);
    const retried = await client.submit(echo(), "x", { queue: "rel", idempotencyKey: "k" });
    expect(retried.taskId).not.toBe("taken-id");
    expect((await retried.status()).status).toBe("PENDING");
  });
});
