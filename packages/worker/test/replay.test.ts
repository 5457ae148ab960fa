import { scripts as brokerScripts } from "@flotilla/broker/testing";
import { scripts } from "@flotilla/store/testing";
import { onCluster, redisUrl, scripted, startFaultProxy, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

// The store's scripts that start tasks (claim: claims and starts; start: starts what a blocking read
// claimed) as they go over the wire: EVAL <source> the first time, EVALSHA <sha1> after.
const startRequest = [scripts.claim, scripts.start].flatMap((script) => [script.sha, script.lua.slice(0, 80)]);

describe.skipIf(onCluster())("a reply lost to a dropped connection", () => {
  const h = useFlotilla("replay");

  it("does not strand a task whose start ran but whose reply was lost: the resent start gets the same attempt", async () => {
    const target = new URL(redisUrl());
    const proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    try {
      const w = await h.worker({ redis: proxy.url, queues: ["replay"], leaseMs: 60_000 });
      let starts = 0;
      w.on("task:started", () => starts++);
      // Redis runs the start; its reply ("run", …) never reaches the worker; ioredis reconnects and resends.
      proxy.dropReplyAfter(startRequest, "$3\r\nrun\r\n");
      const id = await h.submit(scripted("replayed"), "survive a lost reply", { queue: "replay" });
      // The lease is a minute long: only a correct replay can finish it within the wait.
      const record = await h.until(id);
      expect(proxy.drops).toBe(1);
      expect(record).toMatchObject({ status: "COMPLETED", attempt: 1, result: { text: "Echo: survive a lost reply" } });
      expect(starts).toBe(1);
      const running = (await h.events(id)).filter((e) => e.type === "status" && e.status === "running");
      expect(running).toHaveLength(1);
      await w.stop({ drainTimeoutMs: 1000 });
    } finally {
      await proxy.close();
    }
  });

  it("writes one dead letter when the reply of a dead-lettering was lost: the resent call no longer holds the entry", async () => {
    const target = new URL(redisUrl());
    const proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    try {
      const w = await h.worker({ redis: proxy.url, queues: ["orphan"], leaseMs: 60_000 });
      // Redis moves the entry to the dead letters and answers 1; the answer is lost, ioredis resends.
      proxy.dropReplyAfter([brokerScripts.deadLetter.sha, brokerScripts.deadLetter.lua.slice(0, 80)], ":1\r\n");
      // An entry whose task record does not exist: the worker dead-letters it.
      const entryId = await h.broker.enqueue("orphan", "never-written");
      await waitFor(() => proxy.drops === 1, { what: "the dead-lettering's reply to be dropped" });
      await w.stop({ drainTimeoutMs: 5_000 }); // waits for the resent call
      // The resend found the entry no longer this worker's: one letter, not two.
      const letters = await h.broker.listDeadLetters("orphan");
      expect(letters.map((l) => l.entryId)).toEqual([entryId]);
      expect(letters[0]!.reason).toMatch(/record not found/);
    } finally {
      await proxy.close();
    }
  });
});
