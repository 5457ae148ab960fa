import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ValidationError } from "@flotilla/core";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig, redisConnectionOf, type WorkerAppConfig } from "../src/config.ts";

describe("loadConfig", () => {
  it("takes flags over environment over defaults", () => {
    const config = loadConfig(["--concurrency", "8"], { FLOTILLA_CONCURRENCY: "2", FLOTILLA_QUEUES: "a, b", REDIS_URL: "redis://r:1" });
    expect(config).toMatchObject({ concurrency: 8, queues: ["a", "b"], redis: "redis://r:1", prefix: "flotilla", drainTimeoutMs: 30_000 });
  });

  it("reads the default task timeout and per-queue ones; refuses a malformed pair", () => {
    const config = loadConfig(["--default-timeout", "600000"], { FLOTILLA_QUEUE_TIMEOUTS: "chat=60000, reports = 900000" });
    expect(config).toMatchObject({ defaultTimeoutMs: 600_000, queueTimeouts: { chat: 60_000, reports: 900_000 } });
    const none = loadConfig([], {}) as WorkerAppConfig;
    expect([none.defaultTimeoutMs, none.queueTimeouts]).toEqual([undefined, undefined]);
    expect(() => loadConfig(["--queue-timeouts", "chat:60000"], {})).toThrow(/queueTimeouts/);
    expect(() => loadConfig(["--queue-timeouts", "chat=-1"], {})).toThrow(/queueTimeouts/);
  });

  it("reads the signing secrets from the environment, the first one first; refuses a short one", () => {
    const config = loadConfig([], { FLOTILLA_SIGNING_SECRETS: "current-secret-0123456, older-secret-9876543" }) as WorkerAppConfig;
    expect(config.signingSecrets).toEqual(["current-secret-0123456", "older-secret-9876543"]);
    expect((loadConfig([], {}) as WorkerAppConfig).signingSecrets).toBeUndefined();
    expect(() => loadConfig([], { FLOTILLA_SIGNING_SECRETS: "short" })).toThrow(/signingSecrets/);
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

  describe("TLS and Sentinel", () => {
    const dir = mkdtempSync(join(tmpdir(), "flotilla-worker-config-"));
    const pem = (name: string) => {
      const path = join(dir, name);
      writeFileSync(path, `-----BEGIN ${name}-----\n`);
      return path;
    };
    const [ca, cert, key] = [pem("ca.pem"), pem("cert.pem"), pem("key.pem")];
    afterAll(() => rmSync(dir, { recursive: true, force: true }));
    const connection = (argv: string[], env: NodeJS.ProcessEnv = {}) => redisConnectionOf(loadConfig(argv, env) as WorkerAppConfig);

    it("reads the CA and the client certificate files (flags or REDIS_TLS_*), which turn TLS on for the URL", () => {
      expect(connection(["--redis", "rediss://r:6380", "--redis-tls-ca", ca])).toEqual({
        url: "rediss://r:6380",
        tls: { ca: Buffer.from("-----BEGIN ca.pem-----\n") },
      });
      expect(connection([], { REDIS_URL: "rediss://r:6380", REDIS_TLS_CA: ca, REDIS_TLS_CERT: cert, REDIS_TLS_KEY: key })).toEqual({
        url: "rediss://r:6380",
        tls: { ca: expect.any(Buffer), cert: Buffer.from("-----BEGIN cert.pem-----\n"), key: Buffer.from("-----BEGIN key.pem-----\n") },
      });
      // rediss:// alone: TLS with the system's CAs, the URL as it is.
      expect(connection([], { REDIS_URL: "rediss://r:6380" })).toBe("rediss://r:6380");
      expect(connection(["--redis-cluster", "c:7000", "--redis-tls-ca", ca])).toEqual({
        cluster: [{ host: "c", port: 7000 }],
        options: { redisOptions: { tls: { ca: expect.any(Buffer) } } },
      });
    });

    it("refuses a TLS file it cannot read, and a certificate without its key, naming the setting", () => {
      expect(() => loadConfig(["--redis-tls-ca", join(dir, "missing.pem")], {})).toThrow(/redisTlsCa: cannot read .*missing\.pem/);
      expect(() => loadConfig(["--redis-tls-cert", cert], {})).toThrow(/redisTlsCert: give the client certificate and its key together/);
    });

    it("connects through Sentinel given --redis-sentinels and --redis-sentinel-name, with the URL's credentials", () => {
      expect(connection(["--redis", "redis://flotilla-worker:pw@x/2", "--redis-sentinels", "s1:26379,s2:26380", "--redis-sentinel-name", "main"])).toEqual({
        url: "redis://flotilla-worker:pw@x/2",
        sentinels: [
          { host: "s1", port: 26379 },
          { host: "s2", port: 26380 },
        ],
        name: "main",
      });
      const env = { REDIS_SENTINELS: "s1:26379", REDIS_SENTINEL_NAME: "main", REDIS_SENTINEL_PASSWORD: "spw", REDIS_TLS_CA: ca };
      expect(connection([], env)).toMatchObject({ sentinelPassword: "spw", tls: { ca: expect.any(Buffer) }, sentinelTLS: { ca: expect.any(Buffer) } });
      expect(() => loadConfig(["--redis-sentinels", "s1:26379"], {})).toThrow(/redisSentinelName: name the master/);
      expect(() => loadConfig(["--redis-sentinel-name", "main"], {})).toThrow(/redisSentinels/);
      expect(() => loadConfig(["--redis-sentinels", "s1"], {})).toThrow(/redisSentinels.*"s1" is not host:port/);
      expect(() => loadConfig(["--redis-sentinels", "s1:1", "--redis-sentinel-name", "m", "--redis-cluster", "c:1"], {})).toThrow(/not both/);
    });
  });

  it("answers --help", () => {
    expect(loadConfig(["--help"], {})).toBe("help");
  });
});
