import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TestServerError } from "./errors.ts";
import { freePort } from "./ports.ts";

export interface RedisServerOptions {
  /** Append-only file on, fsynced on every write, so `restart()` keeps every acknowledged write. @default true */
  aof?: boolean;
  /** The redis-server executable. @default "redis-server" (from PATH) */
  binary?: string;
  /** More `--name value` arguments for redis-server. */
  args?: string[];
  /** How long to wait for it to answer PING. @default 5_000 */
  startTimeoutMs?: number;
}

export interface TestRedisServer {
  /** redis://127.0.0.1:PORT */
  url: string;
  port: number;
  /** Stops it the way an operator would (SIGTERM: the AOF is flushed) and starts it again on the same port and data. */
  restart(downMs?: number): Promise<void>;
  /** Stops the server (SIGTERM, AOF flushed), keeping its data for `up()`. */
  down(): Promise<void>;
  /** Starts it again after `down()`, on the same port and data; nothing when it is up. */
  up(): Promise<void>;
  /** Stops it for good and removes its data directory. */
  stop(): Promise<void>;
}

/**
 * Whether the redis-server of process `pid` answers on `port`, done loading its data: its INFO names
 * it. Another server on the port (a file beside this one took it first) is not it.
 */
function answers(port: number, pid: number | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port });
    let reply = "";
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(500, () => done(false));
    s.on("error", () => done(false));
    s.on("connect", () => s.write("INFO server\r\nINFO persistence\r\n"));
    s.on("data", (d) => {
      reply += d.toString();
      if (!/loading:\d/.test(reply)) return;
      done(reply.includes(`process_id:${pid}\r`) && reply.includes("loading:0\r"));
    });
  });
}

/**
 * A private redis-server on a free loopback port, its data in a temporary directory: for tests that
 * restart, stop or kill Redis, and for benchmarks that want a Redis of their own.
 */
export async function startRedisServer(options: RedisServerOptions = {}): Promise<TestRedisServer> {
  const aof = options.aof ?? true;
  const binary = options.binary ?? "redis-server";
  const startTimeoutMs = options.startTimeoutMs ?? 5000;
  let port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "flotilla-redis-"));
  const args = () => [
    "--port",
    String(port),
    "--bind",
    "127.0.0.1",
    "--dir",
    dir,
    "--save",
    "",
    ...(aof ? ["--appendonly", "yes", "--appendfsync", "always"] : ["--appendonly", "no"]),
    ...(options.args ?? []),
  ];
  let child: ChildProcess | undefined;
  const running = () => child !== undefined && child.exitCode === null && child.signalCode === null;

  const launch = async () => {
    if (running()) return;
    const c = spawn(binary, args(), { stdio: ["ignore", "ignore", "pipe"] });
    child = c;
    let stderr = "";
    c.stderr!.on("data", (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-2000);
    });
    let failure: Error | undefined;
    c.once("error", (err) => {
      failure = new TestServerError(`could not start ${binary}: ${err.message}`, err);
    });
    c.once("exit", (code, signal) => {
      failure ??= new TestServerError(`${binary} on port ${port} exited (${code ?? signal}) while starting: ${stderr.trim()}`);
    });
    const deadline = Date.now() + startTimeoutMs;
    while (!(await answers(port, c.pid))) {
      if (failure) throw failure;
      if (Date.now() > deadline) {
        c.kill("SIGKILL");
        throw new TestServerError(`${binary} on port ${port} did not answer within ${startTimeoutMs} ms`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  };

  const halt = async () => {
    const c = child;
    if (!c || !running()) return;
    const exited = new Promise((r) => c.once("exit", r));
    c.kill("SIGTERM"); // redis-server flushes the AOF and exits on SIGTERM
    await exited;
  };

  try {
    // A free port can be taken between freePort() and the server's bind (files run side by side,
    // each starting servers): the first start tries another port, a few times.
    for (let tries = 1; ; tries++) {
      try {
        await launch();
        break;
      } catch (err) {
        if (tries >= 5 || !String((err as Error).message).includes("Address already in use")) throw err;
        port = await freePort();
      }
    }
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
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
