// The live feed (GET /v1/events) in a real Chromium: with the pages' own poll set far beyond the
// test, a task submitted through the API appears in the tasks list and reaches COMPLETED, and a
// worker joining and leaving shows on the workers page, each within seconds; a burst of events is a
// few reloads; the feed comes back after its gateway restarts, and the indicator says so.
// @single: a browser on the gateway; the gateway's feed runs on the cluster in apps/gateway/test/live.test.ts
import { createGateway } from "@flotilla/gateway";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { NO_POLL, TOKEN, untilLive, useDashboard } from "./support.ts";

const statusOf = (page: Page, taskId: string) =>
  page
    .locator(`[data-testid="tasks"] tr[data-task="${taskId}"] [data-status]`)
    .getAttribute("data-status", { timeout: 1000 })
    .catch(() => undefined);

describe("dashboard on the live feed", () => {
  const env = useFlotilla("dashboard-live");
  const dash = useDashboard(env);

  it("the tasks list shows a task submitted through the API, then its status changes, from the feed alone", async () => {
    const page = await dash.openLive("#/queues/dash-feed", "/v1/tasks");
    await page.getByText("No tasks.").waitFor();

    // No worker serves the queue yet: it waits.
    const res = await dash.api("/v1/tasks", { method: "POST", body: JSON.stringify({ agent: scripted("fed"), input: "x", options: { queue: "dash-feed" } }) });
    expect(res.status).toBe(201);
    const { taskId } = (await res.json()) as { taskId: string };
    await expect.poll(() => statusOf(page, taskId), { timeout: 10_000 }).toBe("PENDING");

    // A worker takes it: its start and end arrive on the feed.
    await env.worker({ queues: ["dash-feed"] });
    await expect.poll(() => statusOf(page, taskId), { timeout: 10_000 }).toBe("COMPLETED");

    // Another, submitted now, appears too.
    const second = await env.submit(scripted("fed"), "y", { queue: "dash-feed" });
    await expect.poll(() => statusOf(page, second), { timeout: 10_000 }).toBe("COMPLETED");
    await page.context().close();
  });

  it("the overview's queue figures and workers card follow the feed", async () => {
    const page = await dash.openLive("#/", "/v1/queues");
    const waiting = () =>
      page
        .locator('tr[data-queue="dash-ov"] td')
        .nth(1)
        .textContent({ timeout: 1000 })
        .catch(() => undefined);
    const workers = async () => (await page.getByTestId("card-workers").locator(".num").textContent())?.trim();
    const before = Number(await workers());
    await env.submit(scripted("ov"), "x", { queue: "dash-ov" });
    await expect.poll(waiting, { timeout: 10_000 }).toBe("1");
    await env.worker({ queues: ["dash-ov"] });
    await expect.poll(waiting, { timeout: 10_000 }).toBe("0");
    // The card counts heartbeats the feed reads every second; 30 s for a loaded machine (it failed once at 10 s under a load of 12).
    await expect.poll(workers, { timeout: 30_000 }).toBe(String(before + 1));
    await page.context().close();
  });

  it("a burst of 300 submissions is a few reloads of the list, not 300", async () => {
    const page = await dash.openLive("#/queues/dash-burst", "/v1/tasks");
    let loads = 0;
    page.on("request", (req) => {
      if (new URL(req.url()).pathname === "/v1/tasks") loads++;
    });
    await env.client().submitMany(Array.from({ length: 300 }, (_, i) => ({ agent: scripted("burst"), input: i, options: { queue: "dash-burst" } })));
    // The list's first page (25) shows once the feed told of them; the rest of the burst lands within the second after.
    await expect.poll(() => page.locator('[data-testid="tasks"] tbody tr[data-task]').count(), { timeout: 10_000 }).toBe(25);
    await page.waitForTimeout(1000);
    expect(loads).toBeGreaterThan(0);
    expect(loads).toBeLessThanOrEqual(10);
    await page.context().close();
  });

  it("the workers page shows a worker joining and leaving, from the feed alone", async () => {
    const page = await dash.openLive("#/workers", "/v1/workers");
    const row = page.locator('[data-testid="workers"] tr[data-worker="dash-feed-worker"]');
    expect(await row.count()).toBe(0);

    const worker = await env.worker({ queues: ["dash-feed-w"], workerId: "dash-feed-worker" });
    // The feed reads heartbeats every second: the row appearing means it saw the worker, so it will see it go.
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(1);
    await expect.poll(() => row.getByTestId("worker-state").getAttribute("data-state"), { timeout: 10_000 }).toBe("running");

    // A clean stop takes it off the fleet's list.
    await env.stopWorkers({ workers: [worker] });
    await expect.poll(() => row.count(), { timeout: 10_000 }).toBe(0);
    await page.context().close();
  });

  it("the indicator says reconnecting while the gateway is down, live again once it is back, and the page updates again", async () => {
    // A gateway of this test's own, to stop and start again on the same port.
    const options = {
      redis: env.connection,
      prefix: env.prefix,
      dashboardDir: dash.dist,
      tokens: [{ token: TOKEN, role: "admin" as const, queues: "*" as const }],
    };
    const first = createGateway({ ...options, port: 0 });
    const { url } = await first.start();
    const page = await dash.open("#/queues/dash-back", { poll: NO_POLL, base: url });
    await untilLive(page);
    const feed = page.getByTestId("feed");

    await first.close();
    await expect.poll(() => feed.getAttribute("data-state"), { timeout: 10_000 }).toBe("reconnecting");
    const second = createGateway({ ...options, port: Number(new URL(url).port) });
    await second.start();
    try {
      // Backoff from 1 s, doubling: back within a few attempts.
      await expect.poll(() => feed.getAttribute("data-state"), { timeout: 15_000 }).toBe("live");
      const taskId = await env.submit(scripted("back"), "x", { queue: "dash-back" });
      await expect.poll(() => statusOf(page, taskId), { timeout: 10_000 }).toBe("PENDING");
      // Its end can only come from the new feed (the page's reload on reconnecting was before it ran).
      await env.worker({ queues: ["dash-back"] });
      await expect.poll(() => statusOf(page, taskId), { timeout: 10_000 }).toBe("COMPLETED");
    } finally {
      await page.context().close();
      await second.close();
    }
  });
});
