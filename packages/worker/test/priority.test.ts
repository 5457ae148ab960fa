// @cluster: a blocking read over three lanes of one slot, several queues
import type { Priority } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

describe("priorities", () => {
  const h = useFlotilla("priority");

  async function startOrder(queue: string, plan: Array<Priority | number>, fairnessEvery: number) {
    const byId = new Map<string, Priority | number>();
    for (const [i, priority] of plan.entries()) byId.set(await h.submit(scripted("p"), `t${i}`, { queue, priority }), priority);
    const order: Array<Priority | number> = [];
    // Listening from before start: the first claim can start tasks while start() finishes.
    await h.worker({ queues: [queue], concurrency: 1, fairnessEvery }, (w) =>
      w.on("task:started", ({ taskId }: { taskId: string }) => order.push(byId.get(taskId)!)),
    );
    await waitFor(() => order.length === plan.length, { what: "every task to start" });
    return order;
  }

  it("starts every waiting high task before any normal one, and normal before low", async () => {
    const plan: Priority[] = ["low", "normal", "high", "low", "normal", "high", "low", "normal", "high"];
    expect(await startOrder("strict", plan, 1000)).toEqual([...Array(3).fill("high"), ...Array(3).fill("normal"), ...Array(3).fill("low")]);
  });

  it("with fairnessEvery 0, keeps strict priority through a flood of high work", async () => {
    const plan: Priority[] = [...Array(25).fill("high"), "normal", "low"];
    expect(await startOrder("strictest", plan, 0)).toEqual([...Array(25).fill("high"), "normal", "low"]);
  });

  it("puts integer priorities in lanes: above 0 high, 0 normal, below 0 low", async () => {
    const plan = [-5, 0, 10, -1, 3, 0];
    expect(await startOrder("integers", plan, 0)).toEqual([10, 3, 0, 0, -5, -1]);
  });

  it("does not starve a lower lane: low gets a turn within every `fairnessEvery` claims", async () => {
    const plan: Priority[] = [...Array(30).fill("high"), "low", "low", "low"];
    const order = await startOrder("fair", plan, 5);
    const lows = order.flatMap((p, i) => (p === "low" ? [i] : []));
    expect(lows).toHaveLength(3);
    // One low start in each window of five claims, while plenty of high work waits.
    expect(lows[0]).toBeLessThan(5);
    expect(lows[1]! - lows[0]!).toBeLessThanOrEqual(5);
    expect(lows[2]! - lows[1]!).toBeLessThanOrEqual(5);
  });

  it("never runs more than its concurrency when new tasks land in several lanes at once", async () => {
    // Tasks of all three priorities submitted together just as the worker turns from a claim that
    // found none to its blocking read: that read returns an entry from each lane.
    let running = 0;
    let most = 0;
    const seen: string[] = [];
    await h.worker({
      queues: ["lanes-at-once"],
      concurrency: 1,
      executor: {
        execute: async (ctx) => {
          seen.push(ctx.taskId);
          most = Math.max(most, ++running);
          await new Promise((r) => setTimeout(r, 2));
          running--;
          return null;
        },
      },
    });
    const client = h.client();
    const agent = scripted("p");
    const all: string[] = [];
    for (let i = 0; i < 100; i++) {
      const handles = await client.submitMany(
        (["low", "normal", "high"] as const).map((priority) => ({ agent, input: i, options: { queue: "lanes-at-once", priority } })),
      );
      await Promise.all(handles.map((t) => t.result()));
      all.push(...handles.map((t) => t.taskId));
    }
    expect(most).toBe(1);
    expect(seen.sort()).toEqual(all.sort());
  });
});
