// @cluster: workers fire schedule ticks whose records live in slots of their own
import { Agent } from "@flotilla/agent";
import { sleep, ValidationError } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

// client.schedules with real workers: the workers fire the ticks (no scheduler process), each once.
const env = useFlotilla("schedules");
const agent = new Agent({ name: "reporter", model: "scripted:echo" });

describe("client.schedules", () => {
  it("an every-second schedule fired by two workers: one task per tick, each run, with the schedule in its metadata", async () => {
    await env.worker({ queues: ["reports"] });
    await env.worker({ queues: ["reports"] });
    const client = env.client();
    const created = await client.schedules.create({ id: "every-second", every: 1000, agent, input: "the report", options: { queue: "reports" } });
    expect(created).toMatchObject({ id: "every-second", paused: false, fired: 0 });
    await waitFor(async () => ((await client.schedules.get("every-second"))?.fired ?? 0) >= 3, { what: "three ticks", timeoutMs: 15_000 });
    expect(await client.schedules.delete("every-second")).toBe(true);
    const { tasks } = await client.listTasks({ queue: "reports", limit: 100 });
    const ticks = tasks.map((t) => (t.metadata as { scheduledFor: number }).scheduledFor);
    expect(new Set(ticks).size).toBe(ticks.length);
    expect(tasks.every((t) => (t.metadata as { schedule: string }).schedule === "every-second")).toBe(true);
    expect(tasks.map((t) => t.taskId).sort()).toEqual(ticks.map((tick) => `reports/schedule:every-second:${tick}`).sort());
    // Ticks a second apart, and every task runs.
    const sorted = [...ticks].sort((a, b) => a - b);
    for (let i = 1; i < sorted.length; i++) expect(sorted[i]! - sorted[i - 1]!).toBe(1000);
    await Promise.all(tasks.map((t) => client.handle(t.taskId).result({ timeoutMs: 10_000 })));
    expect(await client.schedules.get("every-second")).toBeUndefined();
  });

  it("lists, pauses and resumes; a worker started with schedules: false fires nothing", async () => {
    await env.worker({ queues: ["quiet"], schedules: false });
    const client = env.client();
    await client.schedules.create({ id: "nightly", cron: "0 3 * * *", timezone: "Europe/Paris", agent, input: 1, options: { queue: "quiet" } });
    await client.schedules.create({ id: "often", every: 1000, agent, input: 2, options: { queue: "quiet" } });
    expect((await client.schedules.list()).map((s) => s.id)).toEqual(["often", "nightly"]);
    expect(await client.schedules.pause("nightly")).toBe(true);
    expect((await client.schedules.get("nightly"))?.paused).toBe(true);
    expect(await client.schedules.resume("nightly")).toBe(true);
    expect(await client.schedules.pause("no-such")).toBe(false);
    await sleep(2500);
    // Due more than once by now, but the only worker does not fire schedules.
    expect((await client.schedules.get("often"))?.fired).toBe(0);
    expect((await client.listTasks({ queue: "quiet" })).tasks).toEqual([]);
    for (const id of ["nightly", "often"]) await client.schedules.delete(id);
  });

  it("checks what a schedule fires as a submit would, and refuses per-task ids and times", async () => {
    const client = env.client();
    await expect(client.schedules.create({ id: "bad", every: 1000, agent, input: 1, options: { taskId: "mine" } as never })).rejects.toMatchObject({
      field: "options.taskId",
    });
    await expect(client.schedules.create({ id: "bad", every: 1000, agent: { name: "" } as never, input: 1 })).rejects.toThrow(ValidationError);
    await expect(client.schedules.create({ id: "bad", cron: "not a cron", agent, input: 1 })).rejects.toThrow(/cron/);
    await expect(client.schedules.create({ id: "bad", cron: "* * * * *", every: 1000, agent, input: 1 })).rejects.toThrow(ValidationError);
    expect(await client.schedules.get("bad")).toBeUndefined();
  });
});
