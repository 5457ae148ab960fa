// The dashboardDir option: a folder of static files served at `/` without a token, while the API
// under /v1 keeps its authentication.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";
import { createGateway } from "../src/index.ts";
import { jsonHeaders, useGateway } from "./support.ts";

const TOKENS = [{ token: "dashboard-admin-token-0123", role: "admin" as const, queues: "*" as const }];

describe("gateway: the dashboard's static files", () => {
  const env = useFlotilla("gateway-dashboard");
  const gateways = useGateway(env);
  const dir = mkdtempSync(join(tmpdir(), "gateway-dashboard-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), "<!doctype html><title>Flotilla</title>");
  writeFileSync(join(dir, "assets", "app.js"), "console.log(1);");
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("serves index.html at / and assets by path without a token; /v1 still needs one; nothing when not configured", async () => {
    const { url } = await gateways.start({ tokens: TOKENS, dashboardDir: dir });
    const index = await fetch(`${url}/`);
    expect([index.status, index.headers.get("content-type")]).toEqual([200, expect.stringContaining("text/html")]);
    expect(await index.text()).toContain("<title>Flotilla</title>");
    const asset = await fetch(`${url}/assets/app.js`);
    expect([asset.status, asset.headers.get("content-type"), await asset.text()]).toEqual([200, expect.stringContaining("javascript"), "console.log(1);"]);
    expect((await fetch(`${url}/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${url}/../../etc/passwd`)).status).toBe(404);
    // The API keeps its authentication, and a /v1 path is never a file.
    expect((await fetch(`${url}/v1/queues`)).status).toBe(401);
    expect((await fetch(`${url}/v1/queues`, { headers: jsonHeaders("dashboard-admin-token-0123") })).status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    const plain = await gateways.start();
    expect((await fetch(`${plain.url}/`)).status).toBe(404);
  });

  it("is set by --dashboard-dir or FLOTILLA_GATEWAY_DASHBOARD_DIR; a folder that does not exist is refused", () => {
    expect(loadConfig(["--dashboard-dir", dir], {})).toMatchObject({ dashboardDir: dir });
    expect(loadConfig([], { FLOTILLA_GATEWAY_DASHBOARD_DIR: dir })).toMatchObject({ dashboardDir: dir });
    expect(loadConfig([], {})).not.toHaveProperty("dashboardDir");
    expect(() => createGateway({ redis: env.connection, prefix: env.prefix, dashboardDir: join(dir, "nope") })).toThrow(/dashboardDir/);
  });
});
