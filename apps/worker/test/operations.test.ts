// What an operator reads from a running flotilla-worker: metrics that name the service and the
// worker and time in seconds; Redis loss and return and readiness changes in the log, once each;
// and a log that stays one JSON object per line whatever the libraries print.
// @single: what one process reports (metrics, logs) on a Redis of its own
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix, startRedisServer, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const noisy = fileURLToPath(new URL("./fixtures/noisy-module.ts", import.meta.url));
const prefix = testPrefix("operations");
const redis = testRedis();
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await purgePrefix(redis, prefix);
  await redis.quit();
});

interface Proc {
  child: ChildProcess;
  /** stdout, line by line. */
  lines: string[];
  stderr: () => string;
  /** The parsed lines whose msg is `msg`. */
  logged: (msg: string) => Array<Record<string, unknown>>;
  exited: Promise<number | null>;
  ready: Record<string, unknown>;
}

async function startWorker(args: string[], env: Record<string, string> = {}): Promise<Proc> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], {
    // The suite's Redis, unless the test names one of its own (a private server: no cluster then).
    env: { ...process.env, ...(env.REDIS_URL ? {} : testRedisEnv()), FLOTILLA_PREFIX: prefix, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const lines: string[] = [];
  let partial = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => {
    const parts = (partial + d.toString()).split("\n");
    partial = parts.pop() ?? "";
    lines.push(...parts);
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const parse = () => lines.flatMap((l) => (l.startsWith("{") ? [JSON.parse(l) as Record<string, unknown>] : []));
  const logged = (msg: string) => parse().filter((l) => l.msg === msg);
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  const [ready] = await waitFor(
    () => {
      if (gone) throw new Error(`worker exited before ready:\n${lines.join("\n")}\n${stderr}`);
      const found = logged("ready");
      return found.length > 0 ? found : undefined;
    },
    { timeoutMs: 20_000, what: "the worker to be ready" },
  );
  return { child, lines, stderr: () => stderr, logged, exited, ready: ready! };
}

async function stop(proc: Proc): Promise<void> {
  proc.child.kill("SIGTERM");
  expect(await proc.exited).toBe(0);
}

describe("flotilla-worker, as an operator sees it", () => {
  it("names the service and the worker in its metrics, and exports durations in seconds", async () => {
    const worker = await startWorker(["--metrics-port", "0", "--queues", "ops-metrics", "--worker-id", "ops-metrics-1"]);
    const client = new FlotillaClient({ redis: testConnection(), prefix });
    try {
      await (await client.submit(new Agent({ name: "probe", model: "scripted:x" }), "time me", { queue: "ops-metrics" })).result();
      const base = `http://127.0.0.1:${worker.ready.metricsPort}`;
      const text = await waitFor(
        async () => {
          const body = await (await fetch(`${base}/metrics`)).text();
          return /flotilla_task_duration_seconds_count\{[^}]*queue="ops-metrics"[^}]*\} 1/.test(body) ? body : undefined;
        },
        { what: "the run in /metrics" },
      );
      const target = /^target_info\{(.*)\} 1$/m.exec(text)?.[1];
      expect(target).toContain('service_name="flotilla-worker"');
      expect(target).toContain('service_instance_id="ops-metrics-1"');
      for (const name of ["flotilla_task_duration_seconds", "flotilla_task_wait_time_seconds", "flotilla_stream_event_publish_duration_seconds"]) {
        expect(text).toContain(`# UNIT ${name} s`);
        expect(text).toContain(`# TYPE ${name} histogram`);
      }
      // Buckets for seconds: a quick run lands in a bucket well under a second.
      expect(text).toMatch(/flotilla_task_duration_seconds_bucket\{[^}]*queue="ops-metrics"[^}]*le="0\.5"\} 1/);
      expect(text).not.toMatch(/flotilla_task_duration\{|flotilla_task_duration_count/);
      // Backlog and lag per queue, what autoscaling reads (apps/worker/README.md, "Autoscaling").
      expect(text).toMatch(/^flotilla_queue_depth\{[^}]*queue="ops-metrics"[^}]*\} 0$/m);
      expect(text).toMatch(/^flotilla_queue_oldest_wait_seconds\{[^}]*queue="ops-metrics"[^}]*\} 0$/m);
    } finally {
      await client.close();
      await stop(worker);
    }
  });

  it("OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the names, as in any OpenTelemetry SDK", async () => {
    const worker = await startWorker(["--metrics-port", "0", "--queues", "ops-names"], {
      OTEL_SERVICE_NAME: "billing-workers",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=staging",
    });
    try {
      const text = await (await fetch(`http://127.0.0.1:${worker.ready.metricsPort}/metrics`)).text();
      const target = /^target_info\{(.*)\} 1$/m.exec(text)?.[1];
      expect(target).toContain('service_name="billing-workers"');
      expect(target).toContain('deployment_environment="staging"');
      expect(target).toContain(`service_instance_id="${worker.ready.workerId}"`);
    } finally {
      await stop(worker);
    }
  });

  it("logs Redis lost and restored, and readiness lost and back, once per change", async () => {
    const server = await startRedisServer({ aof: false });
    try {
      const worker = await startWorker(["--queues", "ops-redis"], { REDIS_URL: server.url, FLOTILLA_LOG_LEVEL: "debug" });
      await server.down();
      await waitFor(() => worker.logged("redis connection lost").length === 1 && worker.logged("not ready").length === 1, {
        timeoutMs: 15_000,
        what: "the loss to be logged",
      });
      // Several reconnects fail while Redis is down (each logged at debug): still one line each.
      await waitFor(() => worker.logged("redis connection error").length >= 3, { timeoutMs: 20_000, what: "three failed reconnects" });
      await server.up();
      await waitFor(() => worker.logged("redis connection restored").length === 1 && worker.logged("ready again").length === 1, {
        timeoutMs: 20_000,
        what: "the return to be logged",
      });
      expect(worker.logged("redis connection lost")).toEqual([expect.objectContaining({ level: "warn", redis: `127.0.0.1:${server.port}` })]);
      expect(worker.logged("not ready")).toEqual([expect.objectContaining({ level: "warn", reason: "redis unreachable" })]);
      const [restored] = worker.logged("redis connection restored");
      expect(restored).toMatchObject({ level: "info", downMs: expect.any(Number) });
      expect(worker.logged("ready again")).toEqual([expect.objectContaining({ level: "info", notReadyMs: expect.any(Number) })]);
      // The order an operator reads them in.
      const at = (msg: string) => worker.lines.findIndex((l) => l.includes(`"msg":"${msg}"`));
      expect(at("redis connection lost")).toBeLessThan(at("redis connection restored"));
      expect(at("not ready")).toBeLessThan(at("ready again"));
      // A shutdown is not a loss.
      await stop(worker);
      expect(worker.logged("redis connection lost")).toHaveLength(1);
      expect(worker.logged("not ready")).toHaveLength(1);
    } finally {
      await server.stop();
    }
  }, 90_000);

  it("keeps its output one JSON object per line: ioredis warnings, console output and process warnings included", async () => {
    // A Redis user that may not run INFO: ioredis skips its ready check and says so with
    // console.warn, on every connection.
    const server = await startRedisServer({ aof: false });
    const admin = new Redis(server.url);
    let worker: Proc | undefined;
    try {
      await admin.call("ACL", "SETUSER", "no-info", "on", ">secret", "~*", "&*", "+@all", "-info");
      worker = await startWorker(["--queues", "ops-json", "--module", noisy], { REDIS_URL: `redis://no-info:secret@127.0.0.1:${server.port}` });
      await waitFor(() => worker!.lines.some((l) => l.includes("Skipping the ready check")), { what: "the ioredis warning" });
      await waitFor(() => worker!.lines.some((l) => l.includes("a module warning")), { what: "the process warning" });
      await stop(worker);
    } finally {
      admin.disconnect();
      await server.stop();
    }
    if (!worker) throw new Error("the worker did not start");
    expect(worker.stderr()).toBe("");
    const notJson = worker.lines.filter((l) => {
      try {
        return typeof JSON.parse(l) !== "object";
      } catch {
        return true;
      }
    });
    expect(notJson).toEqual([]);
    const readyCheck = worker.lines.map((l) => JSON.parse(l)).filter((l) => /^Skipping the ready check because INFO command fails/.test(l.msg));
    expect(readyCheck[0]).toMatchObject({ level: "warn", source: "console", service: "flotilla-worker" });
    expect(worker.logged("hello from the module { n: 1 }")).toEqual([expect.objectContaining({ level: "info", source: "console" })]);
    expect(worker.logged("something went wrong in the module")).toEqual([expect.objectContaining({ level: "error", source: "console" })]);
    expect(worker.logged("a module warning")).toEqual([expect.objectContaining({ level: "warn", source: "process", code: "FLOTILLA_TEST_WARNING" })]);
  });
});
