import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { testRedisEnv } from "@flotilla/testing";
import { describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

function runDemo(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, out })));
}

describe("the demo", () => {
  it("runs against the given Redis and exits 0 with every outcome shown", async () => {
    const { code, out } = await runDemo(testRedisEnv());
    expect(out).toContain("6 COMPLETED, 1 FAILED, 1 CANCELLED");
    expect(out).toMatch(/Cancelled marathon while it ran: requested/);
    expect(out).toMatch(/worker-1 .* live {2}completed \d+/);
    expect(code).toBe(0);
  }, 60_000);

  it("starts a throwaway redis-server when nothing answers", async () => {
    const { code, out } = await runDemo({ REDIS_URL: "redis://127.0.0.1:1" });
    expect(out).toContain("starting a throwaway redis-server");
    expect(out).toContain("6 COMPLETED, 1 FAILED, 1 CANCELLED");
    expect(code).toBe(0);
  }, 60_000);
});
