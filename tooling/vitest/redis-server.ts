import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./ports.ts";

export interface TestRedisServer {
  url: string;
  port: number;
  /** Stops it the way an operator would (SHUTDOWN: the AOF is flushed) and starts it again on the same port and data. */
  restart(downMs?: number): Promise<void>;
  /** Stops the server (SIGTERM, AOF flushed), keeping its data for `up()`. */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;
}

function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.on("error", () => done(false));
    s.on("connect", () => s.write("PING\r\n"));
    s.on("data", (d) => done(d.toString().includes("PONG")));
  });
}

/** A private redis-server on a free loopback port (AOF on by default), for tests that restart or kill Redis, and benchmarks. */
export async function startRedisServer(options: { aof?: boolean } = {}): Promise<TestRedisServer> {
  const aof = options.aof ?? true;
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "flotilla-redis-"));
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn(
      "redis-server",
      ["--port", String(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", ...(aof ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"])],
      { stdio: "ignore" },
    );
    for (let i = 0; i < 100 && !(await answers(port)); i++) await new Promise((r) => setTimeout(r, 50));
    if (!(await answers(port))) throw new Error(`redis-server on ${port} did not start`);
  };
  const halt = async () => {
    const c = child;
    if (!c || c.exitCode !== null) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM"); // redis-server flushes the AOF and exits on SIGTERM
    await exited;
  };
  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    async restart(downMs = 300) {
      await halt();
      await new Promise((r) => setTimeout(r, downMs));
      await launch();
    },
    down: halt,
    up: launch,
    async stop() {
      await halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
