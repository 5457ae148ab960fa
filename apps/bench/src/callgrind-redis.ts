// A private redis-server run under valgrind's callgrind, whose instruction count is read per phase:
// a count of instructions is the same for the same work whatever else the machine is doing, where
// CPU time on a shared 2-core machine moves by ±20 % between two runs of the same code.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@flotilla/testing";
import { Redis } from "ioredis";

export interface CallgrindRedis {
  url: string;
  /** Starts counting from zero. */
  zero(): void;
  /** Instructions Redis executed since the last zero(). */
  count(): number;
  stop(): Promise<void>;
}

/** Whether valgrind (callgrind) and callgrind_control are on the PATH. */
export function hasCallgrind(): boolean {
  try {
    execFileSync("valgrind", ["--version"], { stdio: "ignore" });
    execFileSync("callgrind_control", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** Starts `redis-server` (or REDIS_SERVER_BIN) under callgrind on a free loopback port, no persistence. */
export async function startCallgrindRedis(): Promise<CallgrindRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "flotilla-callgrind-"));
  const binary = process.env.REDIS_SERVER_BIN ?? "redis-server";
  const child: ChildProcess = spawn(
    "valgrind",
    [
      "--tool=callgrind",
      `--callgrind-out-file=${dir}/out.%p`,
      binary,
      "--port",
      String(port),
      "--bind",
      "127.0.0.1",
      "--save",
      "",
      "--appendonly",
      "no",
      "--dir",
      dir,
    ],
    { stdio: "ignore" },
  );
  const url = `redis://127.0.0.1:${port}`;
  // Under valgrind Redis takes a few seconds to answer.
  for (let tries = 0; ; tries++) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on("error", () => {});
    const up = await probe.connect().then(
      () => probe.ping().then(() => true),
      () => false,
    );
    probe.disconnect();
    if (up) break;
    if (tries > 100) throw new Error("redis-server under callgrind did not answer in 30 s");
    await new Promise((r) => setTimeout(r, 300));
  }
  const pid = String(child.pid);
  return {
    url,
    zero: () => execFileSync("callgrind_control", ["-z", pid], { stdio: "ignore" }),
    count: () => {
      const before = new Set(readdirSync(dir));
      execFileSync("callgrind_control", ["-d", pid], { stdio: "ignore" });
      const dump = readdirSync(dir).find((f) => f.startsWith("out.") && !before.has(f));
      if (!dump) throw new Error("callgrind wrote no dump");
      const total = /^(?:summary|totals): (\d+)/m.exec(readFileSync(join(dir, dump), "utf8"))?.[1];
      return Number(total);
    },
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
