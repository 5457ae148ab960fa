import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";

export async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, connectTimeout: 1000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on("error", () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === "PONG";
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/** Starts a throwaway redis-server on a free loopback port; `stop()` kills it and removes its folder. */
export async function startThrowawayRedis(): Promise<{ url: string; stop: () => void }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "flotilla-demo-redis-"));
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir], {
    stdio: "ignore",
  });
  const failed = new Promise<never>((_, reject) => {
    child.on("error", (err) => reject(new Error(`could not start redis-server: ${err.message}`)));
  });
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 5000;
  while (!(await Promise.race([answers(url), failed]))) {
    if (Date.now() > deadline) throw new Error("redis-server did not answer within 5 s");
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    url,
    stop: () => {
      child.kill("SIGKILL");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
