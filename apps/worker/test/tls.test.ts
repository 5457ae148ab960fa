// flotilla-worker over TLS: a redis-server on a TLS-only port that requires client certificates,
// the app given the CA and a client certificate by flags (or REDIS_TLS_*) runs a task end to end;
// without the CA it exits 1 saying the server's certificate is not trusted.
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FlotillaClient } from "@flotilla/client";
import { echo, startRedisTlsServer, type TestRedisTlsServer, testPrefix, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const prefix = testPrefix("worker-app-tls");
let server: TestRedisTlsServer;
const children: ChildProcess[] = [];

beforeAll(async () => {
  server = await startRedisTlsServer({ authClients: "yes" });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await server?.stop();
});

/** Spawns the app with `args` (the private server's environment only) and collects its output. */
function run(args: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], {
    // Nothing of the suite's Redis: only the TLS server this file started.
    env: { PATH: process.env.PATH ?? "", FLOTILLA_PREFIX: prefix, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exited, stdout: () => stdout, stderr: () => stderr };
}

describe("flotilla-worker over TLS", () => {
  it("with the CA and a client certificate (flags), runs a task end to end and drains on SIGTERM", async () => {
    const { certificates: files } = server;
    const app = run([
      "--redis",
      server.url,
      "--redis-tls-ca",
      files.ca,
      "--redis-tls-cert",
      files.clientCert,
      "--redis-tls-key",
      files.clientKey,
      "--queues",
      "tls",
    ]);
    const ready = () => {
      if (app.child.exitCode !== null) throw new Error(`the worker exited before ready: ${app.stderr()}`);
      return app.stdout().includes('"msg":"ready"');
    };
    await waitFor(ready, { timeoutMs: 20_000, what: "the worker to be ready" });
    const client = new FlotillaClient({ redis: { url: server.url, tls: server.tls({ clientCertificate: true }) }, prefix });
    try {
      expect(await (await client.submit(echo(), "over tls", { queue: "tls" })).result({ timeoutMs: 20_000 })).toMatchObject({ text: "Echo: over tls" });
    } finally {
      await client.close();
    }
    app.child.kill("SIGTERM");
    expect(await app.exited).toBe(0);
  }, 60_000);

  it("without the CA (REDIS_TLS_* unset), exits 1 saying the server's certificate is not trusted", async () => {
    const app = run(["--queues", "tls"], { REDIS_URL: server.url });
    expect(await app.exited).toBe(1);
    const line = JSON.parse(app.stderr().trim().split("\n").at(-1)!) as { msg: string; code: string; error: string };
    expect(line).toMatchObject({ msg: "worker failed to start", code: "REDIS_UNAVAILABLE" });
    expect(line.error).toMatch(/TLS: the server's certificate is not trusted .*give the CA that signed it/);
  }, 60_000);
});
