import { createKeys } from "@flotilla/core";
import { startRedisServer, testPrefix, waitFor } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import { Bus, busWorker, subscribe } from "../src/index.ts";

describe("a Redis restart mid-stream (AOF, a server of its own)", () => {
  it("loses nothing: every event whose publish returned an id is handled, after the restart too", async () => {
    const server = await startRedisServer({ aof: true });
    const prefix = testPrefix("bus-restart");
    const side = new Redis(server.url);
    side.on("error", () => {});
    const bus = new Bus({ redis: server.url, prefix });
    const worker = new Worker({
      redis: server.url,
      prefix,
      blockMs: 200,
      bus: busWorker({
        webhooks: false,
        subscriptions: [
          subscribe(
            "steady",
            async (event) => {
              await side.hincrby(`${prefix}:handled`, String((event.payload as { n: number }).n), 1);
              return null;
            },
            { name: "h", from: "start", reclaimAfterMs: 1000 },
          ),
        ],
      }),
    });
    try {
      await worker.start();
      const published: number[] = [];
      let n = 0;
      let stop = false;
      const publishing = (async () => {
        while (!stop) {
          const k = n++;
          try {
            await bus.publish("steady", { n: k });
            published.push(k);
          } catch {
            // Refused while Redis is down: not published, so not owed.
          }
          await new Promise((r) => setTimeout(r, 5));
        }
      })();
      await waitFor(() => published.length >= 50);
      await server.restart(500);
      await waitFor(() => published.length >= 150, { timeoutMs: 20_000 });
      stop = true;
      await publishing;
      await waitFor(async () => (await side.hlen(`${prefix}:handled`)) >= published.length, { timeoutMs: 30_000 });
      const handled = await side.hgetall(`${prefix}:handled`);
      expect(published.filter((k) => !handled[String(k)])).toEqual([]);
      expect(await side.xlen(createKeys(prefix).topic("steady"))).toBeGreaterThanOrEqual(published.length);
    } finally {
      await worker.stop({ drainTimeoutMs: 1000 });
      await bus.close();
      side.disconnect();
      await server.stop();
    }
  }, 60_000);
});
