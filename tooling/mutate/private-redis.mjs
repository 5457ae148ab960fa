// @ts-check
// A redis-server of its own for one test run of a broken tree: what broken scripts leave behind (and
// tests that fail before they purge their prefix) dies with it, and the shared Redis is not loaded.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";

/** @returns {Promise<number>} */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
    server.once("error", reject);
  });
}

/** Whether a Redis answers PING at `url` within a second. */
/** @param {string} url @returns {Promise<boolean>} */
export function pings(url) {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname || "127.0.0.1", port: Number(port || 6379) });
    /** @param {boolean} ok */
    const done = (ok) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("error", () => done(false));
    socket.once("connect", () => socket.write("PING\r\n"));
    socket.once("data", (d) => done(d.toString().includes("PONG")));
  });
}

/** Whether `redis-server` is on PATH. */
export function hasRedisServer() {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => dir && existsSync(join(dir, "redis-server")));
}

/**
 * Starts `redis-server` (from PATH) on a free loopback port, in memory; resolves once it answers.
 * @returns {Promise<{ url: string, stop: () => Promise<void> }>}
 */
export async function startPrivateRedis() {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "flotilla-mutate-redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
    stdio: "ignore",
  });
  /** @type {Error | undefined} */
  let failed;
  child.once("error", (err) => {
    failed = err;
  });
  const url = `redis://127.0.0.1:${port}`;
  const stop = () =>
    new Promise((resolve) => {
      const cleanup = () => {
        rmSync(dir, { recursive: true, force: true });
        resolve(undefined);
      };
      if (child.exitCode !== null || child.signalCode !== null || failed) return cleanup();
      child.once("exit", cleanup);
      child.kill("SIGTERM");
    });
  for (let i = 0; i < 100; i++) {
    if (failed) break;
    if (await pings(url)) return { url, stop: /** @type {() => Promise<void>} */ (stop) };
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`could not start redis-server on port ${port}${failed ? `: ${failed.message}` : ""}`);
}
