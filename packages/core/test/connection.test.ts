// A passed-in connection is told apart from options by its shape, not by `instanceof Redis`: a
// client from another copy of ioredis (an application on ioredis 5) must be used, not read as options.
import { onCluster, redisUrl, testRedis } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { closeRedis, type OwnedRedis, openRedis, type RedisConnection } from "../src/redis/connection.ts";

const opened: OwnedRedis[] = [];
afterAll(async () => {
  await Promise.all(opened.map((c) => closeRedis(c)));
});

function open(conn: RedisConnection, role: "command" | "blocking" | "subscriber"): OwnedRedis {
  const owned = openRedis(conn, role);
  opened.push(owned);
  return owned;
}

/** What another copy of ioredis hands us: a client of its own class, so no `instanceof` ours. */
function foreignClient() {
  const duplicates: unknown[] = [];
  const twin = { status: "wait" };
  class ForeignRedis {
    status = "ready";
    options = { host: "127.0.0.1", port: 6379 };
    duplicate(override: unknown) {
      duplicates.push(override);
      return twin;
    }
    defineCommand() {}
    sendCommand() {}
  }
  return { client: new ForeignRedis(), duplicates, twin };
}

describe("openRedis", () => {
  it("uses a client of another ioredis copy as it is, and duplicates it for the blocking and subscriber roles", () => {
    const { client, duplicates, twin } = foreignClient();
    expect(client).not.toBeInstanceOf(Redis);
    const command = openRedis(client, "command");
    expect(command.redis).toBe(client);
    expect(command.owned).toBe(false);
    for (const role of ["blocking", "subscriber"] as const) {
      const own = openRedis(client, role);
      expect(own.redis).toBe(twin);
      expect(own.owned).toBe(true);
    }
    expect(duplicates).toEqual([
      expect.objectContaining({ connectionName: "flotilla:blocking", maxRetriesPerRequest: null }),
      expect.objectContaining({ connectionName: "flotilla:subscriber" }),
    ]);
  });

  it("makes a new client of options, even options that carry functions", () => {
    const retryStrategy = () => 100;
    const own = open({ host: "127.0.0.1", port: 6390, lazyConnect: true, retryStrategy }, "command");
    expect(own.redis).toBeInstanceOf(Redis);
    expect(own.owned).toBe(true);
    expect(own.redis.options.port).toBe(6390);
    expect(own.redis.options.retryStrategy).toBe(retryStrategy);
  });

  it.skipIf(onCluster())("uses a real ioredis client as it is for commands and never closes it", async () => {
    const redis = testRedis();
    try {
      const own = openRedis(redis, "command");
      expect(own.redis).toBe(redis);
      expect(own.owned).toBe(false);
      await closeRedis(own);
      expect(await redis.ping()).toBe("PONG");
      const blocking = open(redis, "blocking");
      expect(blocking.redis).not.toBe(redis);
      expect(blocking.redis.options.connectionName).toBe("flotilla:blocking");
    } finally {
      await redis.quit();
    }
  });

  it.skipIf(onCluster())("reaches the URL it is given", async () => {
    const own = open(redisUrl(), "command");
    expect(await own.redis.ping()).toBe("PONG");
  });
});
