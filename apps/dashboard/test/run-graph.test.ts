// A graph run's page in a real Chromium: the runs list follows runs starting and finishing on the
// live feed, and a run is drawn as its graph: an SVG box per node (a fan-out's instances counted on
// it) and its edges, from the graph the run was started with (the run's answer carries it), the
// nodes not reached yet too. Its page cancels a running run and retries a CANCELLED one, each after a
// confirmation, and shows a node still stopping after its run ended as CANCELLING.
import { join } from "node:path";
import { useFlotilla } from "@flotilla/testing/vitest";
import type { Page } from "playwright-core";
import { beforeAll, describe, expect, it } from "vitest";
import { type GraphPackage, loadGraphPackage, screenshotDir, useDashboard } from "./support.ts";

const nodesOf = (page: Page) =>
  page
    .locator('[data-testid="run-graph"] g[data-node]')
    .evaluateAll((gs) => gs.map((g) => [g.getAttribute("data-node"), g.getAttribute("data-status"), Number(g.getAttribute("data-count"))]));
const edgesOf = (page: Page) =>
  page.locator('[data-testid="run-graph"] path[data-edge]').evaluateAll((ps) => ps.map((p) => p.getAttribute("data-edge")).sort());

describe("dashboard graph runs", () => {
  const env = useFlotilla("dashboard-graph");
  const dash = useDashboard(env);
  let graphs: GraphPackage;
  beforeAll(async () => {
    graphs = await loadGraphPackage();
  });

  it("a run is drawn as its graph: plan → split (a fan-out of 3) → work ×3 → merge, each node EXECUTED", async () => {
    await env.worker({
      concurrency: 8,
      graph: graphs.graphWorker({
        handoffGraceMs: 300,
        sweepIntervalMs: 100,
        nodes: [
          { type: "dash-plan", execute: () => ({ count: 3 }) },
          { type: "dash-split", execute: (i: { count: number }) => Array.from({ length: i.count }, (_, v) => ({ v })) },
          { type: "dash-work", execute: (i: { v: number }) => ({ v: i.v * 2 }) },
          { type: "dash-merge", execute: (i: { values: number[] }) => ({ values: i.values }) },
        ],
      }),
    });
    const page = await dash.openLive("#/runs", "/v1/runs");
    const graph = {
      name: "dash-shape",
      nodes: [
        { id: "plan", type: "dash-plan", next: ["split"] },
        { id: "split", type: "dash-split", fanOut: true, next: ["work"] },
        { id: "work", type: "dash-work", next: ["merge"] },
        { id: "merge", type: "dash-merge", unites: { id: "split" }, inputs: { values: "${{work.outputs.v}}" } },
      ],
    };
    const started = await dash.api("/v1/runs", { method: "POST", body: JSON.stringify({ graph, input: null }) });
    expect(started.status).toBe(201);
    const { runId } = (await started.json()) as { runId: string };
    // The list hears of it starting and finishing on the feed.
    const row = page.locator(`[data-testid="runs"] tr[data-run="${runId}"]`);
    const runStatus = () =>
      row
        .locator("[data-status]")
        .getAttribute("data-status", { timeout: 1000 })
        .catch(() => undefined);
    await expect.poll(runStatus, { timeout: 15_000 }).toBe("SUCCEEDED");

    await row.getByText(runId).click();
    await expect
      .poll(() => nodesOf(page), { timeout: 10_000 })
      .toEqual([
        ["plan", "EXECUTED", 1],
        ["split", "EXECUTED", 1],
        ["work", "EXECUTED", 3],
        ["merge", "EXECUTED", 1],
      ]);
    await expect.poll(() => edgesOf(page)).toEqual(["plan>split", "split>work", "work>merge"]);
    expect(await page.locator('[data-node="work"] [data-testid="instances-badge"]').textContent()).toBe("×3");
    // Left to right: each node's box after the one before it.
    const x = (id: string): Promise<number> => page.locator(`[data-testid="run-graph"] g[data-node="${id}"]`).evaluate((g) => g.getBoundingClientRect().x);
    const xs = await Promise.all(["plan", "split", "work", "merge"].map(x));
    expect(xs.every((v, i) => i === 0 || v > xs[i - 1]!)).toBe(true);
    await page.screenshot({ path: join(screenshotDir(), "graph-run.png"), fullPage: true });
    await page.context().close();
  });

  it("every edge of a diamond, and the nodes not reached yet", async () => {
    // No worker serves these types: A waits, the rest is not reached.
    const graph = {
      name: "dash-diamond",
      nodes: [
        { id: "A", type: "dash-nobody", next: ["B", "C"] },
        { id: "B", type: "dash-nobody", next: ["D"] },
        { id: "C", type: "dash-nobody", next: ["D"] },
        { id: "D", type: "dash-nobody" },
      ],
    };
    const started = await dash.api("/v1/runs", { method: "POST", body: JSON.stringify({ graph, input: "go" }) });
    const { runId } = (await started.json()) as { runId: string };
    const page = await dash.open(`#/runs/${runId}`);
    await expect
      .poll(() => nodesOf(page), { timeout: 10_000 })
      .toEqual([
        ["A", "QUEUED", 1],
        ["B", "UNREACHED", 0],
        ["C", "UNREACHED", 0],
        ["D", "UNREACHED", 0],
      ]);
    expect(await edgesOf(page)).toEqual(["A>B", "A>C", "B>D", "C>D"]);
    await page.context().close();
  });

  it("cancels a running run after a confirmation (a node still stopping reads CANCELLING), then retries it", async () => {
    // No worker serves this type: its node waits, QUEUED.
    const graph = { name: "dash-control", nodes: [{ id: "hold", type: "dash-control-nobody" }] };
    const started = await dash.api("/v1/runs", { method: "POST", body: JSON.stringify({ graph, input: "go" }) });
    const { runId } = (await started.json()) as { runId: string };
    const runOf = async () => (await (await dash.api(`/v1/runs/${runId}`)).json()) as { status: string; nodes: Array<{ status: string; taskId: string }> };
    // Its task reads RUNNING, as a worker's that is slow to stop would: at the cancel its end is not recorded.
    await env.redis.hset(env.keys.task((await runOf()).nodes[0]!.taskId), "status", "RUNNING", "attempt", 1);
    const page = await dash.open(`#/runs/${runId}`);
    const runStatus = () => page.locator('[data-testid="run-status"]').getAttribute("data-status");
    await expect.poll(runStatus, { timeout: 10_000 }).toBe("RUNNING");
    expect(await page.locator('[data-testid="retry-run"]').isDisabled()).toBe(true);

    // Cancel asks first: "No" leaves the run as it is.
    await page.locator('[data-testid="cancel-run"]').click();
    await page.locator('[data-testid="cancel-run-no"]').click();
    expect((await runOf()).status).toBe("RUNNING");
    await page.locator('[data-testid="cancel-run"]').click();
    expect(await page.locator('[data-testid="cancel-run-confirm"]').textContent()).toContain("Cancel this run?");
    await page.locator('[data-testid="cancel-run-yes"]').click();
    await expect.poll(() => page.locator('[data-testid="action-result"]').textContent(), { timeout: 10_000 }).toContain("Cancelled");
    await expect.poll(runStatus, { timeout: 10_000 }).toBe("CANCELLED");
    expect((await runOf()).status).toBe("CANCELLED");
    // Its node was running: CANCELLING on the graph and on its card, until its worker records its end.
    await expect.poll(() => nodesOf(page), { timeout: 10_000 }).toEqual([["hold", "CANCELLING", 1]]);
    expect(await page.locator('[data-testid="nodes"] [data-node="hold"]').getAttribute("data-status")).toBe("CANCELLING");
    expect(await page.locator('[data-testid="cancel-run"]').isDisabled()).toBe(true);
    await page.screenshot({ path: join(screenshotDir(), "graph-run-cancelled.png"), fullPage: true });

    await page.locator('[data-testid="retry-run"]').click();
    await page.locator('[data-testid="retry-run-yes"]').click();
    await expect.poll(() => page.locator('[data-testid="action-result"]').textContent(), { timeout: 10_000 }).toContain("Retried");
    await expect.poll(runStatus, { timeout: 10_000 }).toBe("RUNNING");
    expect((await runOf()).status).toBe("RUNNING");
    await page.context().close();
  });
});
