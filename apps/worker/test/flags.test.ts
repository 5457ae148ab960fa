// @single: processes that stop by themselves or on SIGTERM; one bus topic's webhook, nothing a cluster changes
// Issue 40.8: an unknown flag is refused with the error last (not above 70 lines of usage) and the
// nearest flag suggested; `--version`. Issue 40.13: `--webhook-secret` / FLOTILLA_WEBHOOK_SECRET sign
// the webhooks the worker delivers (a list for a rotation: the first signs).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Bus, SIGNATURE_HEADER, TIMESTAMP_HEADER, verifyWebhook } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig, type WorkerAppConfig } from "../src/config.ts";
import { nearestFlag } from "../src/nearest-flag.ts";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const prefix = testPrefix("app-flags");
const redis = testRedis();
const bus = new Bus({ redis: testConnection(), prefix });
const client = new FlotillaClient({ redis: testConnection(), prefix });
let server: Server | undefined;
const children: ChildProcess[] = [];

afterAll(async () => {
  // A worker that failed its test (never told to stop) must not outlive it.
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  await bus.close();
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** Runs flotilla-worker with `args` and `env` until it exits (by itself, or on SIGTERM once `stopWhen` holds for its stdout). */
function app(args: string[], env: Record<string, string> = {}, stopWhen?: (stdout: string) => boolean) {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], {
    env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, FLOTILLA_MODULE: "", FLOTILLA_WEBHOOK_SECRET: "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    if (stopWhen?.(stdout)) child.kill("SIGTERM");
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on("exit", (code) => resolve({ code, stdout, stderr })),
  );
  return { child, exited, output: () => stdout };
}

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("flotilla-worker's flags", { timeout: 60_000 }, () => {
  it("an unknown flag: exit 2, the error on the last line, the nearest flag suggested, no usage screen above it", async () => {
    const { code, stderr } = await app(["--queus", "a"]).exited;
    expect(code).toBe(2);
    const lines = stderr.trimEnd().split("\n");
    expect(lines.at(-1)).toBe("invalid worker configuration: --queus: unknown option: did you mean --queues?");
    expect(lines.length).toBeLessThanOrEqual(2);
    // A bad value says what is wrong last, too.
    const bad = await app(["--concurrency", "many"]).exited;
    expect(bad.code).toBe(2);
    expect(bad.stderr.trimEnd().split("\n").at(-1)).toMatch(/^invalid worker configuration: concurrency: /);
  });

  it("suggests as the CLI does: the closest flag when close enough, none otherwise", () => {
    expect(nearestFlag("concurency", ["concurrency", "queues"])).toBe("concurrency");
    expect(nearestFlag("webhok-secret", ["webhook-secret", "signing-secrets"])).toBe("webhook-secret");
    expect(nearestFlag("qeueus", ["queues", "lease"])).toBe("queues");
    expect(nearestFlag("zzz", ["queues", "lease"])).toBeUndefined();
    expect(() => loadConfig(["--lease-ms", "1"], {})).toThrow("did you mean --lease?");
  });

  it("--version (and -V) prints the app's version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    for (const flag of ["--version", "-V"]) {
      const { code, stdout } = await app([flag]).exited;
      expect({ code, stdout }).toEqual({ code: 0, stdout: `${version}\n` });
    }
  });

  it("reads the webhook secret from --webhook-secret or FLOTILLA_WEBHOOK_SECRET (comma-separated, current first)", () => {
    expect((loadConfig(["--webhook-secret", "a, b"], { FLOTILLA_WEBHOOK_SECRET: "c" }) as WorkerAppConfig).webhookSecret).toEqual(["a", "b"]);
    expect((loadConfig([], { FLOTILLA_WEBHOOK_SECRET: "c,d" }) as WorkerAppConfig).webhookSecret).toEqual(["c", "d"]);
    expect((loadConfig([], {}) as WorkerAppConfig).webhookSecret).toBeUndefined();
    expect(() => loadConfig(["--webhook-secret", ","], {})).toThrow(/webhookSecret/);
  });
});

// Child processes on a loaded machine: minutes, not the default 30 s; each child has its own deadline below.
describe("flotilla-worker's webhook secret", { timeout: 60_000 }, () => {
  const received: Array<{ path: string; signature: string; timestamp: string; body: string }> = [];
  const module = fileURLToPath(new URL("./fixtures/webhook-module.ts", import.meta.url));

  async function receiver(): Promise<string> {
    server ??= createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        received.push({ path: req.url ?? "", signature: String(req.headers[SIGNATURE_HEADER]), timestamp: String(req.headers[TIMESTAMP_HEADER]), body });
        res.writeHead(200).end();
      });
    });
    if (!server.listening) await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  it.each([
    ["the flag", ["--webhook-secret", "from-the-flag-1,from-the-flag-0"], { FLOTILLA_WEBHOOK_SECRET: "from-the-env" }, "from-the-flag-1"],
    ["the environment", [], { FLOTILLA_WEBHOOK_SECRET: "from-the-env-1, from-the-env-0" }, "from-the-env-1"],
  ] as const)("signs the webhooks it delivers with the secret of %s (the first of a list)", async (source, args, env, signer) => {
    const base = await receiver();
    const workerId = `app-flags-${source === "the flag" ? "flag" : "env"}`;
    const worker = app(["--module", module, "--queues", "app-flags", "--worker-id", workerId, ...args], env);
    try {
      await waitFor(async () => (await client.fleet.status()).workers.some((w) => w.workerId === workerId), { timeoutMs: 40_000 });
      const path = `/${workerId}`;
      await bus.publish("app.hooked", 1, { webhook: `${base}${path}` });
      const request = await waitFor(() => received.find((r) => r.path === path), { timeoutMs: 15_000 });
      expect(verifyWebhook(signer, request)).toBe(true);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }
  });

  it("says so when the flag can take no effect: a module with no bus", async () => {
    const worker = app(["--webhook-secret", "no-bus-to-sign-for", "--queues", "app-flags-nobus", "--log-level", "warn"], {}, (out) =>
      out.includes("no effect"),
    );
    const { stdout } = await worker.exited;
    expect(stdout).toContain("the webhook secret has no effect: the module serves no bus subscriptions");
  });
});
