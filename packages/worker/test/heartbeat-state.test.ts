// What a worker tells the fleet about itself in its heartbeat: its state (running, then draining once
// stop() is called), its version and its application's build.
import type { WorkerRecord } from "@flotilla/health";
import { echo, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { WORKER_VERSION } from "../src/version.ts";

describe("the worker's heartbeat", () => {
  const h = useFlotilla("heartbeat-state");
  const record = async (workerId: string) => {
    const raw = await h.redis.get(h.keys.worker(workerId));
    return raw === null ? undefined : (JSON.parse(raw) as WorkerRecord);
  };

  it("says running with its version and build, draining from stop() until the last task ends, and is gone after", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    let started = false;
    const worker = await h.worker({
      queues: ["hb"],
      buildId: "app-1.4.2+abc123",
      // Beats every 10 s: the states below are seen sooner only because changes are beaten at once.
      heartbeatTtlMs: 30_000,
      executor: {
        execute: async () => {
          started = true;
          await gate;
          return "done";
        },
      },
    });
    expect(await record(worker.workerId)).toMatchObject({ state: "running", version: WORKER_VERSION, buildId: "app-1.4.2+abc123" });
    expect(WORKER_VERSION).toMatch(/^\d+\.\d+\.\d+/);
    expect((await record(worker.workerId))?.reasons).toBeUndefined();

    const id = await h.submit(echo(), "x", { queue: "hb" });
    await waitFor(() => started);
    const stopped = worker.stop();
    await waitFor(async () => (await record(worker.workerId))?.state === "draining", { timeoutMs: 2000 });
    release();
    await stopped;
    expect(await h.until(id)).toMatchObject({ status: "COMPLETED" });
    expect(await record(worker.workerId)).toBeUndefined();
  });
});
