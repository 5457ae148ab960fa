// `flotilla submit --follow` and `flotilla stream` on a queue no live worker serves: said once on
// stderr (stdout stays the output, under --json too), and the command keeps following until a
// worker runs the task.
// @cluster: a task followed live from another process (sharded Pub/Sub), the fleet's heartbeats read
import type { FlotillaEvent } from "@flotilla/client";
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { lines, start } from "./cli.ts";

const notices = (stderr: string, queue: string) => stderr.split("\n").filter((l) => l.includes(`no worker serves queue "${queue}"`));

describe("following a task no worker serves", () => {
  const env = useFlotilla("cli-unserved");

  it("submit --follow says so once on stderr, naming the queue and how to serve it, and follows the task to its end once a worker starts", async () => {
    const following = start(env.prefix, ["submit", "--agent", "greeter", "--model", "scripted:echo", "-q", "cli-unserved", "hello", "--follow"]);
    const stderr = await following.output((err) => notices(err, "cli-unserved").length > 0, { on: "stderr" });
    expect(notices(stderr, "cli-unserved")).toEqual([
      expect.stringMatching(
        /^no worker serves queue "cli-unserved" \(no worker is alive\); still waiting for task cli-unserved\/\S+: start one with `flotilla-worker --queues cli-unserved`$/,
      ),
    ]);
    expect(following.ended()).toBe(false);
    await env.worker({ queues: ["cli-unserved"] });
    const exit = await following.exited;
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stdout).toBe("Echo: hello\n");
    expect(notices(exit.stderr, "cli-unserved")).toHaveLength(1);
    expect(exit.stderr).toContain("[completed]");
  });

  it("stream --json keeps stdout to the events; the notice counts the workers that serve other queues", async () => {
    await env.worker({ queues: ["cli-elsewhere"] });
    const id = await env.submit(scripted("lonely"), "x", { queue: "cli-unserved-json" });
    const following = start(env.prefix, ["stream", id, "--json"]);
    const stderr = await following.output((err) => notices(err, "cli-unserved-json").length > 0, { on: "stderr" });
    expect(notices(stderr, "cli-unserved-json")[0]).toContain("(1 live worker serves other queues)");
    await env.worker({ queues: ["cli-unserved-json"] });
    const exit = await following.exited;
    expect(exit.code, exit.stderr).toBe(0);
    const events = lines<FlotillaEvent>(exit.stdout);
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(notices(exit.stderr, "cli-unserved-json")).toHaveLength(1);
  });
});
