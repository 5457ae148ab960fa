// The TLS and Sentinel helpers: what they start answers as promised (TLS only; a master its
// sentinels agree on, with a synced replica), a failed start cleans up and says why, and stop()
// leaves no process and no directory behind.
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis, type RedisOptions } from "ioredis";
import { describe, expect, it } from "vitest";
import { startRedisSentinel, startRedisTlsServer } from "../src/index.ts";

/** Whether anything accepts connections on `port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    s.on("connect", () => {
      s.destroy();
      resolve(true);
    });
    s.on("error", () => resolve(false));
  });

/**
 * Runs `body` with a temporary directory of its own as TMPDIR (os.tmpdir() reads it at each call)
 * and returns what `body` left there: other test files make directories in the shared one meanwhile.
 */
async function leftIn(body: () => Promise<void>): Promise<string[]> {
  const saved = process.env.TMPDIR;
  const own = mkdtempSync(join(tmpdir(), "flotilla-helper-test-"));
  process.env.TMPDIR = own;
  try {
    await body();
    return readdirSync(own);
  } finally {
    if (saved === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = saved;
    rmSync(own, { recursive: true, force: true });
  }
}

/** A command over its own connection, closed after. */
async function ask(options: RedisOptions, ...command: string[]): Promise<unknown> {
  const r = new Redis({ ...options, lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 1000 });
  r.on("error", () => {});
  try {
    await r.connect();
    return await r.call(command[0]!, ...command.slice(1));
  } finally {
    r.disconnect();
  }
}

describe("startRedisTlsServer", () => {
  it("answers over TLS with the CA (and requires the client certificate when told to), and stop() removes everything", async () => {
    const server = await startRedisTlsServer({ authClients: "yes" });
    try {
      expect(server.url).toBe(`rediss://127.0.0.1:${server.port}`);
      for (const file of Object.values(server.certificates).filter((v) => typeof v === "string")) expect(existsSync(file as string)).toBe(true);
      expect(await ask({ port: server.port, tls: server.tls({ clientCertificate: true }) }, "PING")).toBe("PONG");
      await expect(ask({ port: server.port, tls: server.tls() }, "PING")).rejects.toThrow();
      await expect(ask({ port: server.port }, "PING")).rejects.toThrow();
    } finally {
      await server.stop();
      await server.stop(); // idempotent
    }
    expect(await listening(server.port)).toBe(false);
    expect(existsSync(server.certificates.dir)).toBe(false);
  });

  it("cleans up and says why when the server cannot start", async () => {
    const left = await leftIn(async () => {
      await expect(startRedisTlsServer({ args: ["--no-such-option", "1"] })).rejects.toThrow(/exited .*no-such-option/s);
      await expect(startRedisTlsServer({ openssl: "/nonexistent/openssl" })).rejects.toThrow(/openssl is not installed/);
    });
    expect(left).toEqual([]);
  });
});

describe("startRedisSentinel", () => {
  it("starts a master, its synced replica and three sentinels that agree on it; stop() removes everything", async () => {
    let ports: number[] = [];
    const left = await leftIn(async () => {
      const sentinel = await startRedisSentinel();
      ports = [...sentinel.servers, ...sentinel.sentinels].map((a) => a.port);
      try {
        expect(new Set(ports).size).toBe(5);
        expect(await sentinel.master()).toEqual(sentinel.servers[0]);
        expect(sentinel.connection()).toEqual({ sentinels: sentinel.sentinels, name: "mymaster" });
        expect(String(await ask({ port: sentinel.servers[1]!.port }, "INFO", "replication"))).toContain("master_link_status:up");
        // Through Sentinel, as a client connects: the master answers, writably.
        const r = new Redis({ ...sentinel.connection(), lazyConnect: true });
        try {
          await r.connect();
          expect(await r.set("sentinel-helper-probe", "1")).toBe("OK");
          await r.del("sentinel-helper-probe");
        } finally {
          r.disconnect();
        }
      } finally {
        await sentinel.stop();
        await sentinel.stop(); // idempotent
      }
    });
    for (const port of ports) expect(await listening(port)).toBe(false);
    expect(left).toEqual([]);
  }, 60_000);
});
