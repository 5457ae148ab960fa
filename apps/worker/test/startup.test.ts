// @single: the kill is the test's cleanup of a process that should have stopped; nothing Redis-side
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { freePort, purgePrefix, testPrefix, testRedis, testRedisEnv } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const prefix = testPrefix("startup");
const children: ChildProcess[] = [];

// A worker that starts after all (a regression) must not outlive the test or leave keys behind.
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  const redis = testRedis();
  await purgePrefix(redis, prefix);
  await redis.quit();
});

/** Runs flotilla-worker (from source) until it exits on its own; none of these gets as far as claiming. */
function run(args: string[], nodeArgs: string[] = []): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [...nodeArgs, "--conditions=@flotilla/source", main, ...args], {
    env: { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, FLOTILLA_MODULE: "", FLOTILLA_EXECUTOR: "" },
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.push(child);
  let stderr = "";
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stderr })));
}

describe("flotilla-worker startup errors", () => {
  it("exits 2 naming the module when it fails to load, with the module's own error", async () => {
    const broken = fixture("broken-module.ts");
    const failing = await run(["--module", broken]);
    expect(failing.code).toBe(2);
    expect(failing.stderr).toContain(`invalid worker configuration: module: cannot load ${broken} (--module / FLOTILLA_MODULE)`);
    expect(failing.stderr).toContain("SEARCH_API_KEY is not set");
    expect(failing.stderr).toContain("broken-module.ts:"); // the stack points into the module

    const missing = await run(["--module", "./no-such-module.js"]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/module: cannot load \.\/no-such-module\.js .*Cannot find module/);
  });

  it("exits 2 when the module exports what a worker does not serve, saying where it belongs", async () => {
    const nodes = fixture("shapes/nodes-module.ts");
    const misplaced = await run(["--module", nodes]);
    expect(misplaced.code, misplaced.stderr).toBe(2);
    expect(misplaced.stderr).toContain(
      `invalid worker configuration: module: ${nodes} (--module / FLOTILLA_MODULE) exports \`nodes\`, which a worker does not serve: graph node types are served as \`export const graph = graphWorker({ nodes })\``,
    );
    const both = await run(["--module", fixture("shapes/both-module.ts")]);
    expect(both.code, both.stderr).toBe(2);
    expect(both.stderr).toMatch(/module: .*both-module\.ts .* has both a default export and named exports \(tools\)/);
    const plain = await run(["--module", fixture("shapes/plain-graph-module.ts")]);
    expect(plain.code, plain.stderr).toBe(2);
    expect(plain.stderr).toMatch(/module: .*plain-graph-module\.ts .*: `graph` must be what graphWorker\(\{ nodes \}\) of @flotilla\/graph returns/);
  });

  it("refuses a Redis URL of another scheme at once (exit 2), not after the connect timeout", async () => {
    const { code, stderr } = await run(["--redis", "http://127.0.0.1:6379"]);
    expect(code).toBe(2);
    expect(stderr).toMatch(/invalid worker configuration: redis: expected a redis:\/\/ or rediss:\/\/ URL/);
  });

  it("refuses empty --queues and --prefix instead of falling back to the defaults", async () => {
    for (const flag of ["--queues", "--prefix"]) {
      const { code, stderr } = await run([flag, ""]);
      expect(code, flag).toBe(2);
      expect(stderr, flag).toContain(`invalid worker configuration: ${flag.slice(2)}: ${flag} is empty`);
    }
    const commas = await run(["--queues", " , "]);
    expect(commas.code).toBe(2);
    expect(commas.stderr).toContain("queues: name at least one queue");
  });

  it("Temporal mode: an unreachable server is named with the reason in words, not a transport error dump", async () => {
    const port = await freePort(); // free a moment ago, and nothing listens on it
    const { code, stderr } = await run(["--executor", "temporal", "--temporal-address", `127.0.0.1:${port}`]);
    expect(code).toBe(1);
    const line = JSON.parse(stderr.trim().split("\n").at(-1)!) as { error: string; code: string };
    expect(line.code).toBe("TEMPORAL_UNAVAILABLE");
    expect(line.error).toMatch(
      new RegExp(`^cannot reach the Temporal server at 127\\.0\\.0\\.1:${port}: Connection refused \\(is the server running\\? .*TEMPORAL_ADDRESS\\)$`),
    );
    expect(stderr).not.toContain("tonic");
  });

  it("Temporal mode: a malformed address is a bad configuration", async () => {
    const { code, stderr } = await run(["--executor", "temporal", "--temporal-address", "http://127.0.0.1:7233"]);
    expect(code).toBe(2);
    expect(stderr).toContain("temporalAddress: expected host or host:port, with no scheme");
  });

  it("Temporal mode without @flotilla/temporal installed says how to install it (exit 2)", async () => {
    const { code, stderr } = await run(["--executor", "temporal"], ["--import", fixture("without-temporal.ts")]);
    expect(code).toBe(2);
    expect(stderr).toContain("invalid worker configuration: executor: temporal needs the @flotilla/temporal package");
    expect(stderr).toContain("npm install @flotilla/temporal");
  });
});
