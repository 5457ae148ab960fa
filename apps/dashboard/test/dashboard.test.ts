// The dashboard in a real Chromium, on a real gateway, real workers and a real Redis: the overview,
// a task's tokens arriving live, cancelling a running task, requeueing a dead letter, a graph run.
import { join } from "node:path";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { screenshotDir, TOKEN, taskHash, useDashboard } from "./support.ts";

const text = async (page: Page, testId: string) => (await page.getByTestId(testId).textContent()) ?? "";
const cell = async (page: Page, queue: string, column: number) => (await page.locator(`tr[data-queue="${queue}"] td`).nth(column).textContent())?.trim();
const shot = (page: Page, name: string) => page.screenshot({ path: join(screenshotDir(), `${name}.png`), fullPage: true });

describe("dashboard", () => {
  const env = useFlotilla("dashboard");
  const dash = useDashboard(env);

  it("is served at / without a token, takes ?token= into sessionStorage, and shows the queues and workers live", async () => {
    const index = await fetch(`${dash.url}/`);
    expect([index.status, await index.text()]).toEqual([200, expect.stringContaining('<div id="app">')]);
    expect((await fetch(`${dash.url}/v1/queues`)).status).toBe(401);

    await env.worker({ queues: ["dash-overview", "dash-reports"] });
    for (let i = 0; i < 5; i++) await env.submit(scripted("quick"), `job ${i}`, { queue: i % 2 ? "dash-overview" : "dash-reports" });
    // One left waiting on a queue no worker serves.
    await env.submit(scripted("later"), "waits", { queue: "dash-backlog" });

    const page = await dash.open("#/");
    // The token left the address for sessionStorage.
    await expect.poll(() => page.url()).not.toContain("token=");
    expect(await page.evaluate(() => sessionStorage.getItem("flotilla.token"))).toBe(TOKEN);
    await page.locator('tr[data-queue="dash-overview"]').waitFor();
    await page.locator('tr[data-queue="dash-backlog"]').waitFor();
    await expect.poll(() => text(page, "card-workers")).toMatch(/^1\D/);
    await expect.poll(() => cell(page, "dash-backlog", 1)).toBe("1");
    // More submitted while the page is open shows up without a reload.
    await env.submit(scripted("later"), "waits too", { queue: "dash-backlog" });
    await expect.poll(() => cell(page, "dash-backlog", 1), { timeout: 10_000 }).toBe("2");
    // A few samples in the sparklines.
    await expect.poll(() => page.locator('tr[data-queue="dash-overview"] polyline').count(), { timeout: 10_000 }).toBeGreaterThan(0);
    await shot(page, "overview");

    // The workers page lists the worker running, with its queues.
    await page.goto(`${dash.url}/#/workers`);
    await expect.poll(() => text(page, "workers")).toContain("dash-overview");
    expect(await text(page, "workers")).toContain("running");

    // A queue's tasks, filtered by status.
    await page.goto(`${dash.url}/#/queues/dash-backlog`);
    await expect.poll(() => page.locator('[data-testid="tasks"] tbody tr').count()).toBe(2);
    // Each row shows the head of its task's input.
    expect((await page.getByTestId("input-preview").allTextContents()).sort()).toEqual(["waits", "waits too"]);
    await page.getByTestId("status-filter").selectOption("COMPLETED");
    await expect.poll(() => text(page, "tasks")).toContain("No tasks.");
    await page.getByTestId("status-filter").selectOption("PENDING");
    await expect.poll(() => page.locator('[data-testid="tasks"] tbody tr [data-status="PENDING"]').count()).toBe(2);
    await page.context().close();
  });

  it("asks for a token when it has none", async () => {
    const page = await dash.open("#/");
    await page.evaluate(() => sessionStorage.clear());
    await page.reload();
    await page.locator(".token-form").waitFor();
    await page.locator(".token-form input").fill(TOKEN);
    await page.locator(".token-form button").click();
    await page.getByTestId("card-queues").waitFor();
    await expect.poll(() => page.locator(".token-form").count()).toBe(0);
    await page.context().close();
  });

  it("shows a running task's text as it is generated, token by token, then its result (not the same text twice)", async () => {
    await env.worker({ queues: ["dash-live"] });
    const reply = Array.from({ length: 100 }, (_, i) => `token${i}`).join(" ");
    const taskId = await env.submit(scripted("writer", { reply, tokenDelayMs: 30, toolCalls: [{ name: "lookup", args: { q: "flotilla" } }] }), "write", {
      queue: "dash-live",
    });
    const page = await dash.open(taskHash(taskId));
    // Sample the text while the task runs: it must be seen at several lengths between empty and whole.
    const lengths = new Set<number>();
    let shotTaken = false;
    for (;;) {
      const [status, current] = await Promise.all([
        page
          .getByTestId("task-status")
          .getAttribute("data-status")
          .catch(() => null),
        text(page, "live-text"),
      ]);
      const length = current.replace("▍", "").trim().length;
      if (length > 0 && length < reply.length) {
        lengths.add(length);
        if (!shotTaken && length > reply.length / 3) {
          shotTaken = true;
          await shot(page, "task-live");
        }
      }
      if (status === "COMPLETED") break;
      await page.waitForTimeout(100);
    }
    expect(lengths.size).toBeGreaterThanOrEqual(3);
    await expect.poll(() => text(page, "live-text")).toBe(reply);
    // Its result's text is what streamed: shown once, the result itself as JSON.
    await page.getByTestId("result-json").waitFor();
    expect(await page.getByTestId("result-text").count()).toBe(0);
    expect(await text(page, "timeline")).toMatch(/RUNNING[\s\S]*COMPLETED/);
    expect(await text(page, "tools")).toContain("lookup");
    expect(await page.getByTestId("cancel").isDisabled()).toBe(true);
    await page.context().close();
  });

  it("cancels a running task from its page: it ends CANCELLED", async () => {
    await env.worker({ queues: ["dash-cancel"] });
    const reply = Array.from({ length: 400 }, (_, i) => `slow${i}`).join(" ");
    const taskId = await env.submit(scripted("slow", { reply, tokenDelayMs: 50 }), "go", { queue: "dash-cancel" });
    const page = await dash.open(taskHash(taskId));
    await expect.poll(() => page.getByTestId("task-status").getAttribute("data-status"), { timeout: 15_000 }).toBe("RUNNING");
    await expect.poll(async () => (await text(page, "live-text")).length).toBeGreaterThan(20);
    await page.getByTestId("cancel").click();
    await expect.poll(() => page.getByTestId("task-status").getAttribute("data-status"), { timeout: 15_000 }).toBe("CANCELLED");
    // In words, not the API's raw outcome.
    expect(await text(page, "action-result")).toMatch(/^(Cancel requested: its worker is stopping it|Cancelled: it was waiting and will never run)$/);
    await expect.poll(() => text(page, "timeline")).toContain("CANCELLED");
    // The page stopped before the whole reply: the worker really aborted it.
    expect((await text(page, "live-text")).length).toBeLessThan(reply.length);
    const record = (await (await dash.api(`/v1/tasks/${encodeURIComponent(taskId)}`)).json()) as { status: string };
    expect(record.status).toBe("CANCELLED");
    await page.context().close();
  });

  it("requeues a dead letter from the dead-letters page: the task runs again", async () => {
    // A worker that verifies signatures fails the unsigned task: it is dead-lettered.
    const strict = await env.worker({ queues: ["dash-dead"], signingSecrets: ["dashboard-signing-secret-01"] });
    const taskId = await env.submit(scripted("fixme", { reply: "second time lucky" }), "x", { queue: "dash-dead" });
    expect((await env.until(taskId)).status).toBe("FAILED");
    // The fleet is fixed: a worker that takes unsigned tasks.
    await env.stopWorkers({ workers: [strict] });
    await env.worker({ queues: ["dash-dead"] });

    const page = await dash.open("#/dead-letters/dash-dead");
    const row = page.locator('[data-testid="dead-letters"] tbody tr[data-letter]');
    await expect.poll(() => row.count()).toBe(1);
    expect(await row.textContent()).toContain(taskId);
    await row.getByText("Inspect").click();
    await expect.poll(() => text(page, "dl-detail")).toContain("BAD_SIGNATURE");
    await shot(page, "dead-letters");
    await row.getByTestId("requeue").click();
    await expect.poll(() => text(page, "requeued")).toContain(taskId);
    // The task, not the dead letter's stream id.
    expect(await text(page, "requeued")).toBe(`Re-queued ${taskId}: it runs again.`);
    await expect.poll(() => page.getByTestId("dl-empty").count()).toBe(1);

    // Its page: it ran again and completed.
    await page.getByTestId("requeued").getByText(taskId).click();
    await expect.poll(() => page.getByTestId("task-status").getAttribute("data-status"), { timeout: 15_000 }).toBe("COMPLETED");
    await expect.poll(() => text(page, "live-text")).toBe("second time lucky");
    // Its second attempt (the first failed the signature check before it ran).
    expect(await text(page, "timeline")).toMatch(/RUNNING\s*attempt 2[\s\S]*COMPLETED/);
    await page.context().close();
  });

  it("lists graph runs and shows a run's nodes with their states, live", async () => {
    const graph = {
      name: "dash-graph",
      nodes: [
        { id: "plan", type: "dash-nobody", next: ["write"] },
        { id: "write", type: "dash-nobody" },
      ],
    };
    const started = await dash.api("/v1/runs", { method: "POST", body: JSON.stringify({ graph, input: "go" }) });
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    const page = await dash.open("#/runs");
    await expect.poll(() => text(page, "runs")).toContain(runId);
    await page.getByText(runId).click();
    const node = page.locator('[data-testid="nodes"] [data-node="plan"]');
    await expect.poll(() => node.getAttribute("data-status")).toBe("QUEUED");
    await page.context().close();
  });
});
