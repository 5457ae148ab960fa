// Cancelling and retrying a graph run from the command line (`flotilla run cancel`, `flotilla run
// retry`), with the messages and exit codes of a task's cancel and retry; `flotilla run <id>` shows a
// node that was running when its run was cancelled as CANCELLING until its worker records its end.
// @cluster: a run's cancel and retry move node tasks in their queues' slots and the run in its own
import { run } from "@flotilla/cli";
import { testRedisEnv } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, json } from "./cli.ts";

describe("flotilla run cancel / run retry", () => {
  const env = useFlotilla("cli-run-control");
  /** A run whose node type no worker serves: it stays RUNNING, its node QUEUED. */
  const waitingRun = async (): Promise<string> =>
    (await env.client().startGraph({ name: "cli-control", nodes: [{ id: "only", type: "cli-control-nobody" }] }, "go")).runId;

  it("cancels a running run; one that ended is nothing to cancel (exit 1), as for a task; an unknown run is exit 1", async () => {
    const id = await waitingRun();
    const r = await flotilla(env.prefix, ["run", "cancel", id, "--reason", "changed my mind"]);
    expect(r).toMatchObject({ code: 0, stdout: `cancelled run ${id}\n`, stderr: "" });
    const status = await env.client().graphs.run(id).status();
    expect(status).toMatchObject({ status: "CANCELLED", nodes: [expect.objectContaining({ node: "only", status: "CANCELLED" })] });
    expect(status.error?.message).toContain("changed my mind");
    const again = await flotilla(env.prefix, ["run", "cancel", id]);
    expect(again).toMatchObject({ code: 1, stdout: "", stderr: `error: run ${id} already ended (CANCELLED): nothing to cancel\n` });

    const other = await waitingRun();
    expect(await json(env.prefix, ["run", "cancel", other])).toEqual({ runId: other, outcome: "cancelled", status: "CANCELLED" });
    expect(await flotilla(env.prefix, ["run", "cancel", "nope"])).toMatchObject({ code: 1, stdout: "", stderr: "error: no graph run nope\n" });
    // No run id: a usage error.
    expect(await flotilla(env.prefix, ["run", "cancel"])).toMatchObject({ code: 2, stdout: "" });
  });

  it("retries a CANCELLED run: it runs again; a RUNNING run is refused with one line, exit 1", async () => {
    const id = await waitingRun();
    await env.client().graphs.run(id).cancel();
    const r = await flotilla(env.prefix, ["run", "retry", id]);
    expect(r).toMatchObject({ code: 0, stdout: `retried run ${id}: RUNNING\n`, stderr: "" });
    expect(await env.client().graphs.run(id).status()).toMatchObject({ status: "RUNNING", nodes: [expect.objectContaining({ status: "QUEUED" })] });

    const refused = await flotilla(env.prefix, ["run", "retry", id]);
    expect(refused).toMatchObject({
      code: 1,
      stdout: "",
      stderr: `error: invalid graph run: runId: run ${id} is RUNNING; only a FAILED or CANCELLED run can be retried\n`,
    });
    await env.client().graphs.run(id).cancel();
    expect(await json(env.prefix, ["run", "retry", id])).toEqual({ runId: id, status: "RUNNING" });
    expect(await flotilla(env.prefix, ["run", "retry", "nope"])).toMatchObject({ code: 1, stdout: "", stderr: "error: no graph run nope\n" });
  });

  it("run <id> shows a node running when its run was cancelled as CANCELLING (yellow on a terminal) until its end is recorded", async () => {
    const id = await waitingRun();
    const handle = env.client().graphs.run(id);
    const { taskId } = (await handle.status()).nodes[0]!;
    // Its task reads RUNNING, as a worker's that is slow to stop would: its end is not recorded at the cancel.
    await env.redis.hset(env.keys.task(taskId), "status", "RUNNING", "attempt", 1);
    expect(await flotilla(env.prefix, ["run", "cancel", id])).toMatchObject({ code: 0, stdout: `cancelled run ${id}\n` });

    const shown = await flotilla(env.prefix, ["run", id]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status:\s+CANCELLED$/m);
    expect(shown.stdout).toMatch(/^only@\S*\s+CANCELLING\s+\S+/m);
    expect((await json<{ nodes: Array<{ status: string }> }>(env.prefix, ["run", id])).nodes.map((n) => n.status)).toEqual(["CANCELLING"]);
    // On a terminal it is yellow: under way, like RETRYING.
    const out: string[] = [];
    const tty = { isTTY: true, write: (text: string) => void out.push(text) };
    expect(await run(["run", id], { stdout: tty, stderr: tty, env: { ...testRedisEnv(), FLOTILLA_PREFIX: env.prefix } })).toBe(0);
    expect(out.join("")).toContain("\x1b[33mCANCELLING");

    // Its worker stops it and hands its end on: CANCELLED.
    await env.redis.hset(env.keys.task(taskId), "status", "CANCELLED", "error", JSON.stringify({ message: "stop", code: "CANCELLED" }));
    await env.client().graphs.engine.handOff(taskId);
    expect((await flotilla(env.prefix, ["run", id])).stdout).toMatch(/^only@\S*\s+CANCELLED\s+\S+/m);
  });
});
