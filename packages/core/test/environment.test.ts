// Issue 40.3 and 40.7: one rule for the settings every entry point reads from the environment (an
// option given wins, else its variable, else the default), and one check of a Redis URL everywhere.
import { ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { closeRedis, openRedis } from "../src/redis/connection.ts";
import { resolveConnectionOptions } from "../src/redis/connection-options.ts";
import { checkRedisConnection, ENV, readEnv, redisFromEnv, resolvePrefix } from "../src/redis/environment.ts";

describe("the environment rule", () => {
  it("reads a variable trimmed, and an empty or blank one as unset", () => {
    expect(readEnv("X", { X: "  a  " })).toBe("a");
    expect(readEnv("X", { X: "" })).toBeUndefined();
    expect(readEnv("X", { X: "   " })).toBeUndefined();
    expect(readEnv("X", {})).toBeUndefined();
  });

  it("prefix: the option, else FLOTILLA_PREFIX, else flotilla; a bad one names where it came from", () => {
    expect(resolvePrefix("opt", { FLOTILLA_PREFIX: "env" })).toBe("opt");
    expect(resolvePrefix(undefined, { FLOTILLA_PREFIX: "env" })).toBe("env");
    expect(resolvePrefix(undefined, { FLOTILLA_PREFIX: " " })).toBe("flotilla");
    expect(resolvePrefix(undefined, {})).toBe("flotilla");
    expect(() => resolvePrefix(undefined, { FLOTILLA_PREFIX: "a{b}" })).toThrow(
      expect.objectContaining({ code: "VALIDATION_ERROR", field: "FLOTILLA_PREFIX" }),
    );
    expect(() => resolvePrefix("a b", {})).toThrow(expect.objectContaining({ field: "prefix" }));
  });

  it("Redis: REDIS_CLUSTER_NODES's cluster, else REDIS_URL, else the default, saying which", () => {
    expect(redisFromEnv({})).toEqual({ connection: "redis://127.0.0.1:6379", source: "the default" });
    expect(redisFromEnv({ REDIS_URL: "redis://h:1" })).toEqual({ connection: "redis://h:1", source: "REDIS_URL" });
    expect(redisFromEnv({ REDIS_URL: "redis://h:1", REDIS_CLUSTER_NODES: "a:1,b:2" })).toEqual({
      connection: {
        cluster: [
          { host: "a", port: 1 },
          { host: "b", port: 2 },
        ],
      },
      source: ENV.redisClusterNodes,
    });
  });

  it("refuses a URL of another scheme as every entry point does, naming the variable or the option, password hidden", () => {
    const fromEnv = (() => {
      try {
        redisFromEnv({ REDIS_URL: "http://user:pw@127.0.0.1:6379" });
      } catch (err) {
        return err;
      }
    })() as ValidationError;
    expect(fromEnv).toBeInstanceOf(ValidationError);
    expect(fromEnv.field).toBe("REDIS_URL");
    expect(fromEnv.message).toBe(
      'invalid Redis connection: REDIS_URL: expected a redis:// or rediss:// URL, a unix socket path or host:port (got "http://user:***@127.0.0.1:6379")',
    );
    expect(() => checkRedisConnection("https://h")).toThrow(expect.objectContaining({ field: "redis" }));
    expect(() => checkRedisConnection({ url: "http://h", tls: {} })).toThrow(expect.objectContaining({ field: "redis.url" }));
    for (const fine of ["redis://h:1", "rediss://h:1", "/tmp/redis.sock", "h:6379", { host: "h" }, { cluster: ["h:1"] }])
      expect(() => checkRedisConnection(fine)).not.toThrow();
  });

  it("openRedis refuses such a URL at once, given or from REDIS_URL, rather than reading it as a socket path", () => {
    expect(() => openRedis("http://127.0.0.1:6379", "command")).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", field: "redis" }));
    expect(() => openRedis(undefined, "command", { env: { REDIS_URL: "http://127.0.0.1:6379" } })).toThrow(
      expect.objectContaining({ code: "VALIDATION_ERROR", field: "REDIS_URL" }),
    );
  });

  it("connection options: checked whole, so a constructor refuses them before it connects", async () => {
    expect(resolveConnectionOptions({}, { FLOTILLA_PREFIX: "p" })).toEqual({ redis: undefined, prefix: "p", connectTimeoutMs: 5000 });
    expect(resolveConnectionOptions({ prefix: "q", connectTimeoutMs: 100 }, { FLOTILLA_PREFIX: "p" })).toMatchObject({ prefix: "q", connectTimeoutMs: 100 });
    expect(() => resolveConnectionOptions({}, { REDIS_URL: "http://h" })).toThrow(expect.objectContaining({ field: "REDIS_URL" }));
    expect(() => resolveConnectionOptions({ connectTimeoutMs: 0 })).toThrow(expect.objectContaining({ field: "connectTimeoutMs" }));
    // A valid URL opens as before.
    const own = openRedis(undefined, "command", { env: { REDIS_URL: "redis://127.0.0.1:1" } });
    own.redis.on("error", () => {});
    await closeRedis(own);
  });
});
