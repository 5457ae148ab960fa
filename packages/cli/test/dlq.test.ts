// `flotilla dlq list|show|requeue|purge`: the dead letters failed tasks leave, from the command line.
import type { DeadLetter } from "@flotilla/client";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, json, lines, start } from "./cli.ts";

describe("flotilla dlq", () => {
  const env = useFlotilla("cli-dlq");
  const failing = scripted("fails", { failWith: "bad day" });

  async function failed(queue: string): Promise<string> {
    const id = await env.submit(failing, "x", { queue });
    expect(await env.until(id)).toMatchObject({ status: "FAILED" });
    return id;
  }

  it("list, show and requeue a failed task's dead letter", async () => {
    await env.worker({ queues: ["cli-dlq"] });
    const id = await failed("cli-dlq");

    const listed = await flotilla(env.prefix, ["dlq", "list", "cli-dlq"]);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = listed.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^ID\s+TASK\s+LANE\s+AT\s+REASON/);
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(id);
    const { queue, deadLetters } = await json<{ queue: string; deadLetters: DeadLetter[] }>(env.prefix, ["dlq", "list", "cli-dlq"]);
    expect(queue).toBe("cli-dlq");
    expect(deadLetters).toHaveLength(1);
    const letter = deadLetters[0]!;
    expect(letter).toMatchObject({ queue: "cli-dlq", taskId: id, priority: "normal" });
    expect(rows[1]!.startsWith(letter.id)).toBe(true);

    const shown = await flotilla(env.prefix, ["dlq", "show", "cli-dlq", letter.id]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^dead letter:\\s+${letter.id}$`, "m"));
    expect(shown.stdout).toMatch(new RegExp(`^task:\\s+${id}$`, "m"));
    expect(shown.stdout).toMatch(new RegExp(`^reason:\\s+${letter.reason.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}$`, "m"));
    expect(await json(env.prefix, ["dlq", "show", "cli-dlq", letter.id])).toEqual(letter);

    const requeued = await flotilla(env.prefix, ["dlq", "requeue", "cli-dlq", letter.id]);
    expect(requeued.code, requeued.stderr).toBe(0);
    expect(requeued.stdout).toBe(`requeued ${letter.id}: task ${id} is PENDING again\n`);
    // It ran again (and failed again, leaving a new dead letter).
    await waitFor(async () => {
      const r = await env.client().handle(id).status();
      return r.attempt === 2 && r.status === "FAILED";
    });
    const after = await json<{ deadLetters: DeadLetter[] }>(env.prefix, ["dlq", "list", "cli-dlq"]);
    expect(after.deadLetters.map((l) => l.taskId)).toEqual([id]);
    expect(after.deadLetters[0]!.id).not.toBe(letter.id);

    // The old letter is gone.
    for (const verb of ["show", "requeue"]) {
      const gone = await flotilla(env.prefix, ["dlq", verb, "cli-dlq", letter.id]);
      expect(gone).toMatchObject({ code: 1, stdout: "", stderr: `error: no dead letter ${letter.id} in queue "cli-dlq"\n` });
    }
  });

  it("purge deletes every dead letter of a queue and says how many", async () => {
    await env.worker({ queues: ["cli-dlq-purge"] });
    await failed("cli-dlq-purge");
    await failed("cli-dlq-purge");
    const r = await flotilla(env.prefix, ["dlq", "purge", "cli-dlq-purge"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe("purged 2 dead letters of queue cli-dlq-purge\n");
    expect(await json(env.prefix, ["dlq", "list", "cli-dlq-purge"])).toEqual({ queue: "cli-dlq-purge", deadLetters: [] });
    expect((await flotilla(env.prefix, ["dlq", "list", "cli-dlq-purge"])).stdout).toBe("no dead letters\n");
    expect(await json(env.prefix, ["dlq", "purge", "cli-dlq-purge"])).toEqual({ queue: "cli-dlq-purge", purged: 0 });
  });

  it("list --watch shows new dead letters as they come", async () => {
    await env.worker({ queues: ["cli-dlq-watch"] });
    const watching = start(env.prefix, ["dlq", "list", "cli-dlq-watch", "--watch", "200", "--json"]);
    await watching.output((out) => out.includes('"deadLetters":[]'));
    const id = await failed("cli-dlq-watch");
    await watching.output((out) => out.includes(id));
    watching.interrupt();
    const exit = await watching.exited;
    expect(exit.code).toBe(0);
    expect(
      lines<{ deadLetters: DeadLetter[] }>(exit.stdout)
        .at(-1)!
        .deadLetters.map((l) => l.taskId),
    ).toEqual([id]);
  });
});
