// `flotilla watch`: the fleet live, one line per change (or one JSON event per line), until Ctrl-C.
// @cluster: the fleet's feed from channels of every queue's slot
import type { WatchEvent } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { start } from "./cli.ts";

describe("flotilla watch", () => {
  const env = useFlotilla("cli-watch");

  it("prints tasks and workers as they change; --json one event per line; Ctrl-C ends it with 0", async () => {
    // One a process (Ctrl-C as the shell sends it, and its exit code), the other in process.
    const human = start(env.prefix, ["watch", "--poll", "100"], { process: true });
    const json = start(env.prefix, ["watch", "--queue", "cli-watch-q", "--poll", "100", "--json"]);
    // Each says on stderr once it is live.
    await human.output((err) => err.includes("watching the fleet"), { on: "stderr" });
    await json.output((err) => err.includes("watching queue cli-watch-q"), { on: "stderr" });
    await env.worker({ queues: ["cli-watch-q"], workerId: "cli-watch-worker" });
    const id = await env.submit(scripted("w"), "x", { queue: "cli-watch-q" });
    const failed = await env.submit(scripted("f", { failWith: "nope" }), "x", { queue: "cli-watch-q" });
    await human.output((out) => out.includes(`task.finished   ${failed}`) && out.includes(`task.finished   ${id}`) && out.includes("worker.joined"));
    await json.output((out) => out.includes('"type":"task.finished"') && out.split('"type":"task.finished"').length > 2);
    for (const r of [human, json]) r.interrupt();
    const [h, j] = await Promise.all([human.exited, json.exited]);
    expect([h.code, j.code]).toEqual([0, 0]);
    expect(h.stdout).toMatch(new RegExp(`task\\.finished\\s+${id.replace("/", "\\/")}\\s+COMPLETED`));
    expect(h.stdout).toMatch(new RegExp(`task\\.finished\\s+${failed.replace("/", "\\/")}\\s+FAILED \\[\\w+\\] .*nope`));
    expect(h.stdout).toMatch(/worker\.joined\s+cli-watch-worker\s+\S+ serving cli-watch-q/);
    const events = j.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as WatchEvent);
    expect(
      events
        .filter((e) => e.type === "task.finished")
        .map((e) => (e as { taskId: string }).taskId)
        .sort(),
    ).toEqual([id, failed].sort());
  });
});
