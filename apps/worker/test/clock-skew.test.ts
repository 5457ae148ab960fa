// @cluster: processes with skewed clocks: on a cluster each master has a clock of its own
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient, type FlotillaEvent } from "@flotilla/client";
import { purgePrefix, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const module = fileURLToPath(new URL("./fixtures/chaos-module.ts", import.meta.url));
const skewedClock = pathToFileURL(fileURLToPath(new URL("./fixtures/skewed-clock.mjs", import.meta.url))).href;
const prefix = testPrefix("skew");
const redis = testRedis();
const client = new FlotillaClient({ redis: testConnection(), prefix });
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await client.close();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** A flotilla-worker process whose wall clock is `skewMs` off, serving `queue`; resolves once ready. */
async function skewedWorker(workerId: string, queue: string, skewMs: number): Promise<void> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", "--import", skewedClock, main], {
    env: {
      ...process.env,
      ...testRedisEnv(),
      FLOTILLA_PREFIX: prefix,
      FLOTILLA_MODULE: module,
      FLOTILLA_QUEUES: queue,
      FLOTILLA_WORKER_ID: workerId,
      FLOTILLA_HEARTBEAT_TTL_MS: "1500",
      FLOTILLA_TEST_CLOCK_SKEW_MS: String(skewMs),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const logs: string[] = [];
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on("data", (d: Buffer) => {
      logs.push(d.toString());
      if (logs.join("").includes('"msg":"ready"')) resolve();
    });
    child.stderr!.on("data", (d: Buffer) => logs.push(d.toString()));
    child.on("exit", (code) => reject(new Error(`worker exited (${code}) before ready:\n${logs.join("")}`)));
  });
}

// Its first model call for an input fails (see the chaos module), so the task is retried once.
const flaky = new Agent({ name: "flaky", model: "flaky:x", options: { scripted: { reply: "second time lucky" } as never } });
const echo = new Agent({ name: "echo", model: "scripted:x" });
const BACKOFF_MS = 3000;
const DELAY_MS = 3000;

/** The time (Redis's clock: status events are stamped by the scripts) of a task's first status event of `status`, from `attempt`. */
async function statusAt(events: FlotillaEvent[], status: string, attempt: number): Promise<number> {
  const e = events.find((x) => x.type === "status" && x.status === status && x.attempt === attempt);
  expect(e, `${status} of attempt ${attempt}`).toBeDefined();
  return e!.ts;
}

describe("workers whose clocks are 30 s off", () => {
  for (const skewMs of [30_000, -30_000]) {
    it(`${skewMs > 0 ? "ahead" : "behind"}: retry backoff and delayed starts keep their length, and the fleet shows the worker live`, async () => {
      const queue = skewMs > 0 ? "ahead" : "behind";
      const workerId = `skewed-${queue}`;
      await skewedWorker(workerId, queue, skewMs);

      const retried = await client.submit(flaky, `retry on ${queue}`, { queue, maxRetries: 1, backoff: { delayMs: BACKOFF_MS, jitter: 0 } });
      const delayed = await client.submit(echo, `later on ${queue}`, { queue, delayMs: DELAY_MS });
      expect(await retried.result({ timeoutMs: 20_000 })).toMatchObject({ text: "second time lucky" });
      await delayed.result({ timeoutMs: 20_000 });

      // The backoff: from the failed attempt's RETRYING to the retry's RUNNING, within 10 %.
      const events: FlotillaEvent[] = [];
      for await (const e of retried.stream()) events.push(e);
      const waited = (await statusAt(events, "running", 2)) - (await statusAt(events, "retrying", 1));
      expect(waited).toBeGreaterThanOrEqual(BACKOFF_MS * 0.9);
      expect(waited).toBeLessThanOrEqual(BACKOFF_MS * 1.1);

      // The delay: from creation to start, within 10 %; its due time exactly the delay after creation.
      const record = await delayed.status();
      expect(record.runAt).toBe(record.createdAt + DELAY_MS);
      expect(record.startedAt! - record.createdAt).toBeGreaterThanOrEqual(DELAY_MS * 0.9);
      expect(record.startedAt! - record.createdAt).toBeLessThanOrEqual(DELAY_MS * 1.1);

      // The fleet view: the worker is live, beating on Redis's clock.
      const fleet = await waitFor(async () => {
        const status = await client.fleet.status();
        return status.workers.find((w) => w.workerId === workerId);
      });
      expect(fleet).toMatchObject({ alive: true });
    }, 60_000);
  }
});
