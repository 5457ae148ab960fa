import { scripts } from "@flotilla/store/testing";
import { redisUrl, scripted, startFaultProxy } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

// The store's scripts that start tasks (claim: claims and starts; start: starts what a blocking read
// claimed) as they go over the wire: EVAL <source> the first time, EVALSHA <sha1> after.
const startRequest = [scripts.claim, scripts.start].flatMap((script) => [script.sha, script.lua.slice(0, 80)]);

describe("a reply lost to a dropped connection", () => {
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
});
