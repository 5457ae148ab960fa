// `npm run dashboard`: a worker, the gateway serving the built dashboard and a trickle of sample runs
// on a prefix of its own; Ctrl-C stops it all and leaves no key behind.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { keysUnder, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it, onTestFinished } from "vitest";

const command = fileURLToPath(new URL("../src/dashboard.ts", import.meta.url));
const built = existsSync(fileURLToPath(new URL("../../dashboard/dist/index.html", import.meta.url)));
const inCI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());
const redis = testRedis();
afterAll(() => redis.quit());

describe.skipIf(!built && !inCI)("npm run dashboard", () => {
  it("serves the dashboard and its API on a sample fleet whose runs, graph runs and topic go on; SIGINT removes every key and exits 0", async () => {
    const child = spawn(process.execPath, ["--conditions=@flotilla/source", command], {
      env: { ...process.env, ...testRedisEnv(), FLOTILLA_GATEWAY_PORT: "0", CI: "true" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on("data", (d: Buffer) => {
      out += d.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    // A failed assertion must not leave it running (it would leave its worker and keys behind): stopped as Ctrl-C stops it.
    onTestFinished(async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(-child.pid!, "SIGINT");
      await exited;
    });
    const line = await waitFor(
      () => {
        const m = /Flotilla dashboard: (http:\/\/\S+)\/ .*prefix (\S+);/.exec(out);
        if (!m && child.exitCode !== null) throw new Error(`npm run dashboard exited ${child.exitCode} before its URL line:\n${out}`);
        return m ?? undefined;
      },
      { timeoutMs: 30_000, what: "the URL line" },
    );
    const [, url, prefix] = line;
    const page = await fetch(`${url}/`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<div id=");
    // The sample runs reach the fleet: tasks complete, and one lands in the dead letters.
    await waitFor(
      async () => {
        const { tasks } = (await (await fetch(`${url}/v1/tasks?status=COMPLETED`)).json()) as { tasks: unknown[] };
        return tasks.length > 0;
      },
      { timeoutMs: 30_000, what: "a sample run to complete" },
    );
    const queues = (await (await fetch(`${url}/v1/queues`)).json()) as { queues: Array<{ queue: string; dead: number }> };
    expect(queues.queues.map((q) => q.queue)).toContain("default");
    // The Graph runs and Topics pages have something on them: a sample run, and a topic two subscriptions follow.
    await waitFor(
      async () => {
        const { runs } = (await (await fetch(`${url}/v1/runs`)).json()) as { runs: Array<{ graph: string }> };
        return runs.some((r) => r.graph === "sample-report");
      },
      { timeoutMs: 20_000, what: "a sample graph run" },
    );
    await waitFor(
      async () => {
        const { topics } = (await (await fetch(`${url}/v1/topics`)).json()) as {
          topics: Array<{ topic: string; published: number; groups: Array<{ name: string; counts: { acked: number } }> }>;
        };
        const orders = topics.find((t) => t.topic === "orders.created");
        return orders !== undefined && ["audit", "mailer"].every((name) => (orders.groups.find((g) => g.name === name)?.counts.acked ?? 0) > 0);
      },
      { timeoutMs: 20_000, what: "sample orders handled by both subscriptions" },
    );
    process.kill(-child.pid!, "SIGINT");
    expect(await exited).toBe(0);
    expect(await keysUnder(redis, prefix!)).toEqual([]);
  }, 90_000);
});
