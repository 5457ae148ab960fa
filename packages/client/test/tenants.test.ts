// Key prefixes as tenants: two prefixes on one Redis share nothing. A worker of one never runs the
// other's tasks (same queue names and all), and listings and fleet status see only their own.
import { echo } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

describe("two prefixes on one Redis", () => {
  const a = useFlotilla("tenant-a");
  const b = useFlotilla("tenant-b");

  it("are isolated: a worker on A never runs B's tasks, and A's listings and fleet show nothing of B", async () => {
    const clientA = a.client();
    const clientB = b.client();
    const workerA = await a.worker({ queues: ["shared"] });
    // B's tasks wait, with no worker of B's, in a queue of the same name as A's.
    const waitingB = await Promise.all([1, 2, 3].map((i) => clientB.submit(echo(), `b ${i}`, { queue: "shared" })));
    // Submitted after B's: once A's worker has run these, it has had every chance to take B's.
    const doneA = await Promise.all([1, 2, 3].map((i) => clientA.submit(echo(), `a ${i}`, { queue: "shared" })));
    for (const h of doneA) expect(await h.result()).toMatchObject({ text: expect.stringMatching(/^Echo: a /) });
    for (const h of doneA) expect((await h.status()).workerId).toBe(workerA.workerId);
    for (const h of waitingB) expect((await h.status()).status).toBe("PENDING");
    expect(await clientB.fleet.queueDepth("shared")).toMatchObject({ waiting: 3 });

    const workerB = await b.worker({ queues: ["shared"] });
    for (const h of waitingB) expect(await h.result()).toMatchObject({ text: expect.stringMatching(/^Echo: b /) });
    for (const h of waitingB) expect((await h.status()).workerId).toBe(workerB.workerId);

    const listed = async (client: typeof clientA) => (await client.listTasks()).tasks.map((t) => t.taskId).sort();
    expect(await listed(clientA)).toEqual(doneA.map((h) => h.taskId).sort());
    expect(await listed(clientB)).toEqual(waitingB.map((h) => h.taskId).sort());
    expect((await clientA.fleet.status()).workers.map((w) => w.workerId)).toEqual([workerA.workerId]);
    expect((await clientB.fleet.status()).workers.map((w) => w.workerId)).toEqual([workerB.workerId]);
    // A task id of B's is unknown on A, whatever the queue name says.
    await expect(clientA.handle(waitingB[0]!.taskId).status()).rejects.toMatchObject({ code: "TASK_NOT_FOUND" });
  });
});
