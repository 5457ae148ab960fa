// The workers page in a real Chromium: each worker's state, version and build; a worker that is not
// ready with its reason (its heartbeat record written the way a worker on a full Redis writes it);
// a worker that stopped beating, dead whatever its last record said.
import { join } from "node:path";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { screenshotDir, useDashboard } from "./support.ts";

describe("dashboard workers page", () => {
  const env = useFlotilla("dashboard-workers");
  const dash = useDashboard(env);

  /** A heartbeat record as a worker writes it (the record is the worker's to write; this stands in for one). */
  async function writeRecord(workerId: string, beatAgoMs: number, extra: Record<string, unknown>): Promise<void> {
    const [seconds] = await env.redis.time();
    const now = Number(seconds) * 1000;
    const record = {
      workerId,
      hostname: "h",
      pid: 7,
      queues: ["dash-w-c"],
      concurrency: 2,
      running: [],
      completed: 0,
      failed: 0,
      startedAt: now - 60_000,
      lastBeat: now - beatAgoMs,
      heartbeatTtlMs: 15_000,
      ...extra,
    };
    await env.redis.set(env.keys.worker(workerId), JSON.stringify(record), "PX", 60_000);
    await env.redis.zadd(env.keys.workers(), now - beatAgoMs, workerId);
  }

  it("shows each worker's state (a not-ready one with why, a dead one), version and build", async () => {
    await env.worker({ queues: ["dash-w"], workerId: "dash-w-running", buildId: "shop-2026.11.25" });
    const [seconds] = await env.redis.time();
    const since = Number(seconds) * 1000 - 30_000;
    await writeRecord("dash-w-stuck", 0, {
      state: "not-ready",
      reasons: [{ reason: "redis-full", detail: "Redis at 127.0.0.1:6379 is full", since }],
      version: "1.2.3",
    });
    // Its last record said running, but it stopped beating a minute ago.
    await writeRecord("dash-w-gone", 60_000, { state: "running", version: "1.2.2" });
    const fleet = (await (await dash.api("/v1/workers")).json()) as { workers: Array<{ workerId: string; version?: string }> };
    const version = fleet.workers.find((w) => w.workerId === "dash-w-running")?.version;
    expect(version).toMatch(/^\d+\.\d+\.\d+/);

    const page = await dash.open("#/workers");
    const row = (id: string) => page.locator(`[data-testid="workers"] tr[data-worker="${id}"]`);
    const state = (id: string) => row(id).getByTestId("worker-state").getAttribute("data-state", { timeout: 1000 });
    await expect.poll(() => state("dash-w-running"), { timeout: 10_000 }).toBe("running");
    expect(await row("dash-w-running").getByTestId("worker-version").textContent()).toBe(version);
    expect(await row("dash-w-running").getByTestId("worker-build").textContent()).toBe("shop-2026.11.25");

    expect(await state("dash-w-stuck")).toBe("not-ready");
    expect(await row("dash-w-stuck").getByTestId("worker-version").textContent()).toBe("1.2.3");
    expect(await row("dash-w-stuck").getByTestId("worker-build").textContent()).toBe("—");
    const reason = row("dash-w-stuck").getByTestId("worker-reason");
    expect(await reason.getAttribute("data-reason")).toBe("redis-full");
    expect(await reason.textContent()).toMatch(/redis-full: Redis at 127\.0\.0\.1:6379 is full \(since 3\d(\.\d)? s ago\)/);

    expect(await state("dash-w-gone")).toBe("dead");
    expect(await row("dash-w-gone").getByTestId("worker-reason").count()).toBe(0);
    expect(await page.getByTestId("workers-summary").textContent()).toMatch(/^2 alive, 1 dead/);
    await page.screenshot({ path: join(screenshotDir(), "workers.png"), fullPage: true });
    await page.context().close();
  });
});
