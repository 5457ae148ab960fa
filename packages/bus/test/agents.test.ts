import { ErrorCodes } from "@flotilla/core";
import { collect, scripted, waitFor } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { agentTaskName, busWorker, subscribe } from "../src/index.ts";
import { useBus } from "./helpers.ts";

const t = useBus("bus-agents");

describe("agent subscriptions", () => {
  it("each event becomes a task named from the event: its stream can be followed, its result is the reply", async () => {
    const indexer = scripted("indexer", { reply: "indexed {input}", tokenDelayMs: 5 });
    await t.env.worker({ agents: [indexer], bus: busWorker({ subscriptions: [subscribe("file.uploaded", indexer, { name: "indexer" })] }) });
    const reply = t.bus.request("file.uploaded", "report.pdf", { timeoutMs: 15_000 });
    await waitFor(async () => (await t.bus.inspect("file.uploaded")).length === 1);
    const [event] = await t.bus.inspect("file.uploaded");
    const handle = t.env.client().handle(`default/${agentTaskName("file.uploaded", "indexer", event!.id)}`);
    // The event is in the topic before its subscription's consumer has made the task.
    await waitFor(async () => (await t.env.store.get(handle.taskId)) !== undefined, { what: "the event's task" });
    const events = await collect(handle.stream());
    expect(events.map((e) => e.type)).toContain("text");
    expect((await reply).payload).toMatchObject({ text: "indexed report.pdf" });
    const record = await t.env.store.get(handle.taskId);
    expect(record).toMatchObject({ status: "COMPLETED", metadata: { busTopic: "file.uploaded", busEvent: event!.id, busSubscription: "indexer" } });
  });

  it("cancelling the event's task dead-letters the event with TASK_CANCELLED", async () => {
    const slow = scripted("slow", { reply: "a b c d e f g h i j k l", tokenDelayMs: 400 });
    await t.env.worker({ agents: [slow], bus: busWorker({ subscriptions: [subscribe("slow.jobs", slow, { name: "slow" })] }) });
    const id = await t.bus.publish("slow.jobs", "x");
    const handle = t.env.client().handle(`default/${agentTaskName("slow.jobs", "slow", id)}`);
    await t.env.until(handle.taskId, ["RUNNING"], { timeoutMs: 10_000 });
    await handle.cancel("not needed");
    await waitFor(async () => (await t.bus.deadLetters.list("slow.jobs", "slow")).length === 1, { timeoutMs: 10_000 });
    expect((await t.bus.deadLetters.list("slow.jobs", "slow"))[0]).toMatchObject({ eventId: id, reason: ErrorCodes.TASK_CANCELLED });
  });

  it("a redelivery (its consumer stopped while the task ran) finds the same task instead of making a second one", async () => {
    const slow = scripted("slowish", { reply: "a b c d e f", tokenDelayMs: 150 });
    const sub = subscribe("once", slow, { name: "once" });
    const first = await t.env.worker({ workerId: "first", agents: [slow], bus: busWorker({ subscriptions: [sub] }) });
    const id = await t.bus.publish("once", "x");
    const taskId = `default/${agentTaskName("once", "once", id)}`;
    await t.env.until(taskId, ["RUNNING"], { timeoutMs: 10_000 });
    // Stopping hands the delivery (and the task) back; the second worker takes both over.
    await t.env.stopWorkers({ workers: [first], drainTimeoutMs: 0 });
    await t.env.worker({ workerId: "second", agents: [slow], bus: busWorker({ subscriptions: [sub] }) });
    await waitFor(async () => (await t.bus.groups("once"))[0]?.counts.acked === 1, { timeoutMs: 20_000 });
    const tasks = await t.env.client().listTasks({ queue: "default" });
    expect(tasks.tasks.map((x) => x.taskId)).toEqual([taskId]);
    expect((await t.env.store.get(taskId))?.status).toBe("COMPLETED");
    expect((await t.bus.groups("once"))[0]!.counts.delivered).toBe(2);
  });
});
