import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { startRedisServer } from "../src/index.ts";

const quietly = (url: string) => {
  const r = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  r.on("error", () => {});
  return r;
};

describe("startRedisServer", () => {
  it("keeps its data over a restart with AOF on, and is unreachable while down", async () => {
    const server = await startRedisServer();
    try {
      expect(server.url).toBe(`redis://127.0.0.1:${server.port}`);
      const a = quietly(server.url);
      await a.set("kept", "yes");
      await a.xadd("stream", "*", "f", "v");
      a.disconnect();

      await server.restart(50);
      const b = quietly(server.url);
      expect(await b.get("kept")).toBe("yes");
      expect(await b.xlen("stream")).toBe(1);
      b.disconnect();

      await server.down();
      await expect(quietly(server.url).ping()).rejects.toThrow();
      await server.up();
      await server.up(); // already up: nothing to do
      const c = quietly(server.url);
      expect(await c.get("kept")).toBe("yes");
      c.disconnect();
    } finally {
      await server.stop();
    }
    await expect(quietly(server.url).ping()).rejects.toThrow();
  });

  it("starts empty after a restart with AOF off", async () => {
    const server = await startRedisServer({ aof: false });
    try {
      const a = quietly(server.url);
      await a.set("lost", "yes");
      a.disconnect();
      await server.restart(50);
      const b = quietly(server.url);
      expect(await b.get("lost")).toBeNull();
      b.disconnect();
    } finally {
      await server.stop();
    }
  });

  it("fails fast when redis-server cannot start", async () => {
    await expect(startRedisServer({ binary: "/nonexistent/redis-server" })).rejects.toThrow(/could not start/);
    await expect(startRedisServer({ args: ["--no-such-option", "1"] })).rejects.toThrow(/exited/);
  });
});
