// @single: a GraphClient of its own on ports where no Redis answers
// A GraphClient made on its own fails a call with a ConnectionError once connectTimeoutMs has passed
// without Redis, as FlotillaClient does, instead of waiting for it as long as it takes.
import { ConnectionError } from "@flotilla/core";
import { startHungRedis } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { GraphClient } from "../src/index.ts";

describe("GraphClient's connection", () => {
  it("fails with a ConnectionError, not a hang, when Redis is unreachable or never answers", async () => {
    const hung = await startHungRedis();
    try {
      for (const redis of ["redis://127.0.0.1:1", hung.env().REDIS_URL!]) {
        const client = new GraphClient({ redis, connectTimeoutMs: 300 });
        const err = await client.listRuns().catch((e: unknown) => e);
        expect(err, redis).toBeInstanceOf(ConnectionError);
        expect((err as ConnectionError).code).toBe("REDIS_UNAVAILABLE");
        await client.close();
      }
    } finally {
      await hung.close();
    }
    // The option is checked like the client's.
    expect(() => new GraphClient({ connectTimeoutMs: -1 })).toThrow(expect.objectContaining({ field: "connectTimeoutMs" }));
  });
});
