import { Agent } from "@flotilla/agent";
import { cleanupPrefix, redisUrl, testPrefix, testRedis } from "@flotilla/tooling/test-utils";
import { Worker, type WorkerOptions } from "@flotilla/worker";
import { afterAll, afterEach } from "vitest";
import { FlotillaClient, type FlotillaEvent } from "../src/index.ts";

/** A client and workers on a prefix of their own, all closed and cleaned after the test file. */
export function useFlotilla(name: string) {
  const prefix = testPrefix(name);
  const admin = testRedis();
  const clients: FlotillaClient[] = [];
  const workers: Worker[] = [];
  const env = {
    prefix,
    admin,
    client(): FlotillaClient {
      const c = new FlotillaClient({ redis: redisUrl(), prefix });
      clients.push(c);
      return c;
    },
    async worker(options: WorkerOptions = {}): Promise<Worker> {
      const w = new Worker({ redis: redisUrl(), prefix, blockMs: 1000, heartbeatTtlMs: 3000, ...options });
      workers.push(w);
      await w.start();
      return w;
    },
  };
  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop({ drainTimeoutMs: 2000 })));
  });
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await cleanupPrefix(admin, prefix);
    await admin.quit();
  });
  return env;
}

export const echo = (options: Record<string, unknown> = {}) =>
  new Agent({ name: "echo", model: "scripted:echo", options: { scripted: options } as never });

/** Every event of a stream, in order. */
export async function collect(events: AsyncIterable<FlotillaEvent>): Promise<FlotillaEvent[]> {
  const out: FlotillaEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}
