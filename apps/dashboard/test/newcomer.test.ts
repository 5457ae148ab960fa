// What a newcomer tripped over, in a real Chromium on a real gateway and workers: a page load that
// asks for a missing icon; a queue a worker serves missing from the overview until its first task;
// throughput as glyphs; a delayed task that reads as stuck in PENDING; a task's status twice and its
// output printed again as its result.
// @single: a browser on the gateway; the gateway's routes run on the cluster in apps/gateway/test
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { taskHash, useDashboard } from "./support.ts";

const text = async (page: Page, testId: string) => (await page.getByTestId(testId).first().textContent()) ?? "";

describe("dashboard: a newcomer's rough edges", () => {
  const env = useFlotilla("dashboard-newcomer");
  const dash = useDashboard(env);

  it("loads its pages without a failed request, and has an icon of its own (no /favicon.ico 404)", async () => {
    const page = await dash.open("#/");
    const failed: string[] = [];
    page.on("response", (res) => {
      if (res.status() >= 400) failed.push(`${res.status()} ${new URL(res.url()).pathname}`);
    });
    for (const hash of ["#/", "#/tasks", "#/workers", "#/runs", "#/topics"]) {
      await page.goto(`${dash.url}/${hash}`);
      await page.reload();
      await page.locator("main section h1").waitFor();
    }
    expect(failed).toEqual([]);
    // What a browser asks for its tab's icon: the page's icon link, else /favicon.ico (headless Chromium asks for neither).
    const link = page.locator('link[rel~="icon"]');
    const href = (await link.count()) > 0 ? await link.getAttribute("href") : null;
    const icon = await fetch(new URL(href ?? "/favicon.ico", page.url()));
    expect({ href, status: icon.status, type: icon.headers.get("content-type") }).toEqual({
      href: "./favicon.svg",
      status: 200,
      type: expect.stringContaining("image/svg+xml"),
    });
    await page.context().close();
  });

  it("lists a queue a live worker serves before anything was submitted to it, with its workers, and says its outcomes in words", async () => {
    await env.worker({ queues: ["nc-served", "nc-busy"] });
    const done = await env.submit(scripted("quick"), "one", { queue: "nc-busy" });
    expect((await env.until(done)).status).toBe("COMPLETED");
    const page = await dash.open("#/");
    const served = page.locator('tr[data-queue="nc-served"]');
    await served.waitFor();
    expect(await served.getAttribute("data-served-only")).not.toBeNull();
    expect(await served.textContent()).toContain("served, nothing submitted yet");
    // Its workers column (the 8th): one live worker serves it.
    expect((await served.locator("td").nth(7).textContent())?.trim()).toBe("1");
    const busy = page.locator('tr[data-queue="nc-busy"]');
    await expect.poll(() => busy.getByTestId("outcomes").textContent(), { timeout: 10_000 }).toMatch(/^\s*1 completed in the last \d/);
    expect(await page.locator('[data-testid="queues"]').textContent()).not.toMatch(/[✓✗⊘]/);
    await page.context().close();
  });

  it("shows when a delayed task will run, in the list and on its page", async () => {
    const taskId = await env.submit(scripted("later"), "tomorrow, maybe", { queue: "nc-delayed", delayMs: 10 * 60_000 });
    const page = await dash.open("#/queues/nc-delayed");
    const row = page.locator(`tr[data-task="${taskId}"]`);
    await row.waitFor();
    expect(await row.locator('[data-status="PENDING"]').count()).toBe(1);
    expect(await row.getByTestId("run-at").textContent()).toMatch(/^runs at .+ \(in (9|10) min\)$/);
    await page.goto(`${dash.url}/${taskHash(taskId)}`);
    await expect.poll(() => text(page, "run-at"), { timeout: 10_000 }).toMatch(/^runs at .+ \(in (9|10) min\)$/);
    await page.context().close();
  });

  it("shows a finished task's status once, and its output once: the result's text is what streamed", async () => {
    await env.worker({ queues: ["nc-once"] });
    const reply = "one answer, shown once";
    const taskId = await env.submit(scripted("once", { reply }), "go", { queue: "nc-once" });
    expect((await env.until(taskId)).status).toBe("COMPLETED");
    const page = await dash.open(taskHash(taskId));
    await expect.poll(() => page.getByTestId("task-status").getAttribute("data-status"), { timeout: 10_000 }).toBe("COMPLETED");
    await expect.poll(() => text(page, "live-text"), { timeout: 10_000 }).toBe(reply);
    await page.getByTestId("result-json").waitFor();
    expect(await page.locator("main .toolbar").getByText("COMPLETED", { exact: true }).count()).toBe(1);
    expect(await page.getByTestId("result-text").count()).toBe(0);
    expect(await page.locator("main").getByText(reply, { exact: true }).count()).toBe(1);
    await page.context().close();
  });
});
