// client.watch() tells each task's events in the order they happened: a task that a worker starts
// and finishes before the next read of submissions still comes as task.submitted, task.started,
// task.finished (the feed the CLI's `watch` and the gateway's SSE read). A task submitted before the
// watch began is told from its first change, with no submission.
// @cluster: the fleet's feed followed live (sharded Pub/Sub of each queue's slot)
import { scripted, sized, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import type { FleetWatch, WatchEvent } from "../src/index.ts";

function record(watch: FleetWatch) {
  const seen: WatchEvent[] = [];
  const done = (async () => {
    for await (const e of watch) seen.push(e);
  })();
  return { seen, done };
}

const typesOf = (seen: WatchEvent[], taskId: string) => seen.filter((e) => "taskId" in e && e.taskId === taskId).map((e) => e.type);

describe("client.watch() order", () => {
  const env = useFlotilla("watch-order");

  it("tasks that start and finish fast, many times: each one's submission comes before its start and end", async () => {
    await env.worker({ queues: ["wo-fast", "wo-other"], concurrency: 4 });
    const client = env.client();
    // The queues exist before the watch, so their channels are live from its start (a queue that
    // appears later is caught up from its records at its first round: not what this is about).
    await env.until(await env.submit(scripted("warm"), "x", { queue: "wo-fast" }));
    await env.until(await env.submit(scripted("warm"), "x", { queue: "wo-other" }));
    // Submissions read every second (the CLI's default): without the read a task's change asks for,
    // most tasks here would be told started and finished before they were told submitted.
    const watch = client.watch({ pollMs: 1000 });
    await watch.ready;
    const r = record(watch);
    // The first round of each queue tells what happened before it from the records, in order: past it.
    const probes = await Promise.all(["wo-fast", "wo-other"].map((queue) => env.submit(scripted("probe"), "x", { queue, delayMs: 3_600_000 })));
    await waitFor(() => probes.every((id) => typesOf(r.seen, id).includes("task.submitted")), { timeoutMs: 10_000, what: "each queue's first round" });
    const ids: string[] = [];
    const rounds = sized({ ci: 12, long: 100 });
    for (let round = 0; round < rounds; round++) {
      const batch = await Promise.all([
        env.submit(scripted("quick"), "x", { queue: "wo-fast" }),
        env.submit(scripted("quick"), "x", { queue: "wo-fast" }),
        env.submit(scripted("quick"), "x", { queue: "wo-other" }),
      ]);
      ids.push(...batch);
      for (const id of batch) await env.until(id);
    }
    await waitFor(() => ids.every((id) => typesOf(r.seen, id).includes("task.finished")), { timeoutMs: 30_000, what: "every task's end in the feed" });
    await watch.close();
    await r.done;
    for (const id of ids) expect(typesOf(r.seen, id), id).toEqual(["task.submitted", "task.started", "task.finished"]);
  });

  it("a task submitted before the watch is told from its first change, without a submission", async () => {
    const client = env.client();
    const old = await env.submit(scripted("old"), "x", { queue: "wo-old" });
    // The watch tells submissions from the millisecond it began, that one included: begin it later.
    const createdAt = (await env.client().handle(old).status()).createdAt;
    const redisMs = async () => {
      const [seconds, micros] = await env.redis.time();
      return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    };
    await waitFor(async () => (await redisMs()) > createdAt, { timeoutMs: 5000, what: "Redis's clock past the submission" });
    // Its queue known to the watch from the start, its first round done before the task moves.
    const watch = client.watch({ queue: "wo-old", pollMs: 100 });
    await watch.ready;
    const r = record(watch);
    const fresh = await env.submit(scripted("fresh"), "x", { queue: "wo-old" });
    await waitFor(() => typesOf(r.seen, fresh).includes("task.submitted"), { timeoutMs: 10_000, what: "the fresh task's submission" });
    await env.worker({ queues: ["wo-old"] });
    await waitFor(() => [old, fresh].every((id) => typesOf(r.seen, id).includes("task.finished")), { timeoutMs: 20_000, what: "both ends" });
    await watch.close();
    await r.done;
    expect(typesOf(r.seen, old)).toEqual(["task.started", "task.finished"]);
    expect(typesOf(r.seen, fresh)).toEqual(["task.submitted", "task.started", "task.finished"]);
  });
});
