import type { Priority } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

describe("priorities", () => {
  const h = useFlotilla("priority");

  async function startOrder(queue: string, plan: Priority[], fairnessEvery: number) {
    const byId = new Map<string, Priority>();
    for (const [i, priority] of plan.entries()) byId.set(await h.submit(scripted("p"), `t${i}`, { queue, priority }), priority);
    const w = await h.worker({ queues: [queue], concurrency: 1, fairnessEvery });
    const order: Priority[] = [];
    w.on("task:started", ({ taskId }: { taskId: string }) => order.push(byId.get(taskId)!));
    await waitFor(() => order.length === plan.length, { what: "every task to start" });
    return order;
  }

  it("starts every waiting high task before any normal one, and normal before low", async () => {
    const plan: Priority[] = ["low", "normal", "high", "low", "normal", "high", "low", "normal", "high"];
    expect(await startOrder("strict", plan, 1000)).toEqual([...Array(3).fill("high"), ...Array(3).fill("normal"), ...Array(3).fill("low")]);
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
});
