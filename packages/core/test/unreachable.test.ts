// Issue 40.7 and 39.11: a Redis that cannot be reached is a ConnectionError in Flotilla's words (not
// ioredis's notice about an option Flotilla sets itself), and a connection closed while it waits to
// reconnect ends at once: the commands it held fail (CLOSED) rather than wait for ever.
import { ErrorCodes } from "@flotilla/core";
import { freePort } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { closeRedis, disconnectRedis, openRedis, withRedis } from "../src/redis/connection.ts";

async function downUrl(): Promise<{ url: string; address: string }> {
  const port = await freePort();
  return { url: `redis://127.0.0.1:${port}`, address: `127.0.0.1:${port}` };
}

async function failure(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (err) {
    return err as { code?: string; message: string };
  }
  throw new Error("expected a failure");
}

describe("a Redis that cannot be reached", () => {
  it("fails a command with REDIS_UNAVAILABLE and the connection's own error, not ioredis's retry notice", async () => {
    const { url, address } = await downUrl();
    const conn = openRedis(url, "command", { failFast: true, connectTimeoutMs: 1000 });
    conn.redis.on("error", () => {});
    try {
      const err = await failure(withRedis(conn.redis, () => conn.redis.ping()));
      expect(err.code).toBe(ErrorCodes.REDIS_UNAVAILABLE);
      expect(err.message).toBe(`Redis at ${address} is unreachable: connect ECONNREFUSED ${address}`);
      expect(err.message).not.toMatch(/maxRetriesPerRequest|max retries/i);
    } finally {
      await closeRedis(conn);
    }
  });

  it("says which setting named the address when none was given (REDIS_URL)", async () => {
    const { url, address } = await downUrl();
    const conn = openRedis(undefined, "command", { failFast: true, connectTimeoutMs: 1000, env: { REDIS_URL: url } });
    conn.redis.on("error", () => {});
    try {
      const err = await failure(withRedis(conn.redis, () => conn.redis.ping()));
      expect(err.message).toBe(`Redis at ${address} (REDIS_URL) is unreachable: connect ECONNREFUSED ${address}`);
    } finally {
      await closeRedis(conn);
    }
  });

  it("disconnectRedis ends a connection between two tries: what it held fails CLOSED, and it stays ended", async () => {
    const { url } = await downUrl();
    // Never gives up by itself (a worker's or a blocking connection): only closing ends it.
    const conn = openRedis(url, "blocking");
    conn.redis.on("error", () => {});
    const first = withRedis(conn.redis, () => conn.redis.ping());
    const settled = first.then(
      () => "answered",
      (err: { code?: string }) => err.code,
    );
    // Wait until it has failed to connect once and waits to try again.
    while (conn.redis.status !== "reconnecting") await new Promise((resolve) => setTimeout(resolve, 10));
    disconnectRedis(conn.redis);
    expect(conn.redis.status).toBe("end");
    expect(await settled).toBe(ErrorCodes.CLOSED);
  });
});
