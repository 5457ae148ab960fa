// Runs once before any test: builds every package's Lua (src/generated/lua.ts) from its lua/ folder,
// so tests always run the scripts as they are on disk. With FLOTILLA_TEST_REDIS=cluster it also
// starts a Redis Cluster (3 masters, 1 replica each) on loopback ports and points the suite at it:
// test files reach it through @flotilla/testing's testConnection(), testRedis() and testRedisEnv().
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildPackage, luaPackages } from "../lua/build.mjs";

/** @flotilla/testing's TEST_CLUSTER_ENV (this file is loaded without the workspace's source conditions). */
const TEST_CLUSTER_ENV = "FLOTILLA_TEST_REDIS_CLUSTER";

/**
 * Node's compile cache for every process the run starts: the test files' forks and, above all, the
 * workers, CLIs and gateways the tests spawn from TypeScript sources, each of which would otherwise
 * compile the same few hundred modules again (about half of a spawn's CPU). A folder of this run's
 * own, so two runs at once never share one; NODE_COMPILE_CACHE or NODE_DISABLE_COMPILE_CACHE, when
 * set, are left as they are.
 */
function compileCache(): (() => void) | undefined {
  if (process.env.NODE_COMPILE_CACHE || process.env.NODE_DISABLE_COMPILE_CACHE) return undefined;
  const dir = mkdtempSync(join(tmpdir(), "flotilla-compile-cache-"));
  process.env.NODE_COMPILE_CACHE = dir;
  return () => rmSync(dir, { recursive: true, force: true });
}

export default async function setup(): Promise<(() => void | Promise<void>) | undefined> {
  for (const dir of luaPackages()) buildPackage(dir);
  const dropCache = compileCache();
  const mode = process.env.FLOTILLA_TEST_REDIS ?? "single";
  if (mode === "single") return dropCache;
  if (mode !== "cluster") throw new Error(`FLOTILLA_TEST_REDIS must be "single" or "cluster", not "${mode}"`);
  const script = fileURLToPath(new URL("../scripts/test-cluster.ts", import.meta.url));
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", script], { stdio: ["pipe", "pipe", "inherit"] });
  let out = "";
  const nodes = await new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString();
      const m = /^nodes (\S+)$/m.exec(out);
      if (m) resolve(m[1]!);
    });
    child.once("exit", (code) => reject(new Error(`the test cluster did not start (exit ${code}): ${out.trim()}`)));
  });
  // Forks the suite starts from now on inherit these.
  process.env[TEST_CLUSTER_ENV] = nodes;
  process.env.REDIS_URL = `redis://${nodes.split(",")[0]}`;
  process.stderr.write(`[flotilla tests] on a Redis Cluster: ${nodes}\n`);
  return async () => {
    const exited = once(child, "exit");
    child.kill("SIGTERM");
    await exited;
    dropCache?.();
  };
}
