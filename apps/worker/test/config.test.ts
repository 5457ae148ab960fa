import { ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { loadConfig, redisConnectionOf, type WorkerAppConfig } from "../src/config.ts";

describe("loadConfig", () => {
  it("takes flags over environment over defaults", () => {
    const config = loadConfig(["--concurrency", "8"], { FLOTILLA_CONCURRENCY: "2", FLOTILLA_QUEUES: "a, b", REDIS_URL: "redis://r:1" });
    expect(config).toMatchObject({ concurrency: 8, queues: ["a", "b"], redis: "redis://r:1", prefix: "flotilla", drainTimeoutMs: 30_000 });
  });

  it("rejects bad values naming them", () => {
    expect(() => loadConfig([], { FLOTILLA_QUEUES: "a{b}" })).toThrow(ValidationError);
    expect(() => loadConfig(["--log-level", "loud"], {})).toThrow(/logLevel/);
    expect(() => loadConfig(["--unknown"], {})).toThrow();
  });

  it("connects to a Redis Cluster given by --redis-cluster or REDIS_CLUSTER_NODES, before REDIS_URL", () => {
    const fromEnv = loadConfig([], { REDIS_URL: "redis://r:1", REDIS_CLUSTER_NODES: "10.0.0.1:7000,10.0.0.2:7001" }) as WorkerAppConfig;
    expect(redisConnectionOf(fromEnv)).toEqual({
      cluster: [
        { host: "10.0.0.1", port: 7000 },
        { host: "10.0.0.2", port: 7001 },
      ],
    });
    const fromFlag = loadConfig(["--redis-cluster", "c:7000"], { REDIS_CLUSTER_NODES: "10.0.0.1:7000" }) as WorkerAppConfig;
    expect(redisConnectionOf(fromFlag)).toEqual({ cluster: [{ host: "c", port: 7000 }] });
    expect(redisConnectionOf(loadConfig([], { REDIS_URL: "redis://r:1" }) as WorkerAppConfig)).toBe("redis://r:1");
    expect(() => loadConfig(["--redis-cluster", "c:port"], {})).toThrow(/redisCluster.*"c:port" is not host:port/);
  });

  it("answers --help", () => {
    expect(loadConfig(["--help"], {})).toBe("help");
  });
});
