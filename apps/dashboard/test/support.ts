// What the dashboard's tests share: the dashboard built from its sources (Vite, into a folder of the
// test's own, so a test never sees a stale dist), a real gateway serving it over the test env's
// prefix with a token, and a real Chromium.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { createGateway, type Gateway } from "@flotilla/gateway";
import type { TestEnv } from "@flotilla/testing";
import type { WorkerOptions } from "@flotilla/worker";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, expect } from "vitest";

export const DASHBOARD_DIR = dirname(dirname(fileURLToPath(import.meta.url)));
export const TOKEN = "dashboard-test-admin-token";

/** Builds the dashboard with Vite into a new temporary folder; returns it. */
export function buildDashboard(): string {
  const outDir = mkdtempSync(join(tmpdir(), "flotilla-dashboard-"));
  const vite = join(DASHBOARD_DIR, "node_modules", "vite", "bin", "vite.js");
  const res = spawnSync(process.execPath, [vite, "build", "--outDir", outDir, "--emptyOutDir", "--logLevel", "warn"], { cwd: DASHBOARD_DIR, encoding: "utf8" });
  if (res.status !== 0 || !existsSync(join(outDir, "index.html"))) throw new Error(`vite build failed (${res.status}): ${res.stderr}${res.stdout}`);
  return outDir;
}

/** Chromium: FLOTILLA_CHROMIUM, else Debian's /usr/bin/chromium. */
export const chromiumPath = (): string => process.env.FLOTILLA_CHROMIUM ?? "/usr/bin/chromium";

/** Where screenshots go: docs/ when DASHBOARD_SCREENSHOTS=1 (to refresh the README's), else a temporary folder. */
export const screenshotDir = (): string => {
  const dir = process.env.DASHBOARD_SCREENSHOTS === "1" ? join(DASHBOARD_DIR, "docs") : join(tmpdir(), "flotilla-dashboard-screenshots");
  mkdirSync(dir, { recursive: true });
  return dir;
};

export interface DashboardHarness {
  /** The gateway's address (`http://127.0.0.1:<port>`). */
  readonly url: string;
  readonly gateway: Gateway;
  /** The dashboard's build, for another gateway to serve. */
  readonly dist: string;
  /**
   * A new page (its own browser context) at the dashboard's `hash` route, signed in with `?token=`.
   * `poll` sets the pages' fallback poll (ms): long, only the live feed can update a page in time;
   * `base` opens it on another gateway than the harness's.
   */
  open(hash?: string, options?: { poll?: number; base?: string }): Promise<Page>;
  /**
   * A page on the live feed alone (no poll within the test), once it is live and has loaded
   * `path` twice: its first load, and the one the feed asks for when it connects (what happened
   * before is not replayed). From then on only the feed's events change what the page shows.
   */
  openLive(hash: string, path: string): Promise<Page>;
  /** `fetch` on the gateway's API with the token. */
  api(path: string, init?: RequestInit): Promise<Response>;
}

/** Builds the dashboard, starts a gateway serving it (with a token) and Chromium for the file; all closed after it. */
export function useDashboard(env: TestEnv): DashboardHarness {
  // No browser: CI must have one (.ci/run installs it), so there the file fails; elsewhere its tests skip, saying how to get one.
  const noBrowser = !existsSync(chromiumPath());
  const inCI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());
  if (noBrowser && !inCI) beforeEach((ctx) => ctx.skip(`no Chromium at ${chromiumPath()}: apt-get install chromium (or set FLOTILLA_CHROMIUM)`));
  let dist: string | undefined;
  let gateway: Gateway | undefined;
  let browser: Browser | undefined;
  let url = "";
  beforeAll(async () => {
    if (noBrowser && !inCI) return;
    dist = buildDashboard();
    gateway = createGateway({
      redis: env.connection,
      prefix: env.prefix,
      port: 0,
      dashboardDir: dist,
      tokens: [{ token: TOKEN, role: "admin", queues: "*" }],
    });
    ({ url } = await gateway.start());
    browser = await chromium.launch({ executablePath: chromiumPath(), args: ["--no-sandbox"] });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await gateway?.close();
    if (dist) rmSync(dist, { recursive: true, force: true });
  });
  return {
    get url() {
      return url;
    },
    get gateway() {
      return gateway!;
    },
    get dist() {
      return dist!;
    },
    async open(hash = "#/", options = {}) {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${options.base ?? url}/?token=${TOKEN}${options.poll ? `&poll=${options.poll}` : ""}${hash}`);
      return page;
    },
    async openLive(hash, path) {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      let loads = 0;
      page.on("response", (res) => {
        if (new URL(res.url()).pathname === path && res.ok()) loads++;
      });
      await page.goto(`${url}/?token=${TOKEN}&poll=${NO_POLL}${hash}`);
      await untilLive(page);
      await expect.poll(() => loads, { timeout: 10_000 }).toBeGreaterThanOrEqual(2);
      return page;
    },
    api(path, init = {}) {
      return fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...init.headers } });
    },
  };
}

export const taskHash = (taskId: string): string => `#/task/${encodeURIComponent(taskId)}`;

/** Long enough that a page's own poll never comes within a test: what changes on it came from the live feed. */
export const NO_POLL = 600_000;

/** Waits until the page is on the live feed (the indicator says so). */
export async function untilLive(page: Page): Promise<void> {
  await page.locator('[data-testid="feed"][data-state="live"]').waitFor({ timeout: 10_000 });
}

/** What the graph tests use of @flotilla/graph. */
export interface GraphPackage {
  graphWorker(options: {
    nodes: ReadonlyArray<{ type: string; execute: (inputs: never) => unknown }>;
    handoffGraceMs?: number;
    sweepIntervalMs?: number;
  }): NonNullable<WorkerOptions["graph"]>;
}

/**
 * @flotilla/graph, to serve a run's node types on a test worker. The dashboard does not depend on it
 * (it sees runs only through the gateway), so it is loaded from where the gateway's client finds it:
 * the same copy the gateway runs runs with.
 */
export async function loadGraphPackage(): Promise<GraphPackage> {
  const client = realpathSync(join(DASHBOARD_DIR, "node_modules", "@flotilla", "client"));
  const graph = realpathSync(join(client, "node_modules", "@flotilla", "graph"));
  return (await import(pathToFileURL(join(graph, "src", "index.ts")).href)) as GraphPackage;
}

/** What the bus tests use of @flotilla/bus: a worker's subscriptions. */
export interface BusPackage {
  subscribe(topic: string, handler: (event: { payload: unknown }) => unknown, options: { name: string; maxRetries?: number }): unknown;
  busWorker(options: { subscriptions: unknown[] }): NonNullable<WorkerOptions["bus"]>;
}

/**
 * @flotilla/bus, to serve subscriptions on a test worker. Like @flotilla/graph, the dashboard does not
 * depend on it (it sees the bus only through the gateway): it is the copy the gateway publishes and
 * reads with.
 */
export async function loadBusPackage(): Promise<BusPackage> {
  const gateway = realpathSync(join(DASHBOARD_DIR, "node_modules", "@flotilla", "gateway"));
  const bus = realpathSync(join(gateway, "node_modules", "@flotilla", "bus"));
  return (await import(pathToFileURL(join(bus, "src", "index.ts")).href)) as BusPackage;
}
