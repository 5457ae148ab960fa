// What the dashboard's tests share: the dashboard built from its sources (Vite, into a folder of the
// test's own, so a test never sees a stale dist), a real gateway serving it over the test env's
// prefix with a token, and a real Chromium.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createGateway, type Gateway } from "@flotilla/gateway";
import type { TestEnv } from "@flotilla/testing";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach } from "vitest";

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
  /** A new page (its own browser context) at the dashboard's `hash` route, signed in with `?token=`. */
  open(hash?: string): Promise<Page>;
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
    async open(hash = "#/") {
      const context = await browser!.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await context.newPage();
      await page.goto(`${url}/?token=${TOKEN}${hash}`);
      return page;
    },
    api(path, init = {}) {
      return fetch(`${url}${path}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...init.headers } });
    },
  };
}

export const taskHash = (taskId: string): string => `#/task/${encodeURIComponent(taskId)}`;
