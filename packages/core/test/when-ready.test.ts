// Redis's clock and memory are read so that a connection dropped again and again never leaves a
// read waiting for ever: ioredis forgets a command it wrote during its ready check (INFO and TIME
// are written then) when the connection is lost in that moment. A worker's probe waited so, and the
// worker stopped taking work (seen in CI, a CLIENT KILL storm).
import { startRedisServer, type TestRedisServer } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { redisTime } from "../src/redis/clock.ts";
import { readRedisMemory } from "../src/redis/memory.ts";

let server: TestRedisServer;
beforeAll(async () => {
  server = await startRedisServer({ aof: false });
});
afterAll(async () => {
  await server?.stop();
});

describe("reads that must come back", () => {
  it("redisTime and readRedisMemory settle, every one, through a connection killed hundreds of times", async () => {
    const conn = new Redis(server.url, { maxRetriesPerRequest: null, retryStrategy: (n) => Math.min(50 * 2 ** n, 2000), connectionName: "reader" });
    conn.on("error", () => {});
    const admin = new Redis(server.url);
    let sent = 0;
    let open = 0;
    const read = (r: Promise<unknown>) => {
      sent++;
      open++;
      void r.then(
        () => open--,
        () => open--,
      );
    };
    const reads = setInterval(() => {
      read(redisTime(conn));
      read(readRedisMemory(conn));
    }, 2);
    for (let round = 0; round < 600; round++) {
      await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").catch(() => {});
      await new Promise((r) => setTimeout(r, 1 + Math.random() * 15));
    }
    clearInterval(reads);
    const deadline = Date.now() + 10_000;
    while (open > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(sent).toBeGreaterThan(1000);
    expect(open).toBe(0);
    conn.disconnect();
    admin.disconnect();
  }, 60_000);
});
