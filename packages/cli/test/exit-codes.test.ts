// Exit codes and error lines, from outside: 0 done, 1 failed (unknown id, Redis down, refused), 2
// usage. An error is one line on stderr, no stack, stdout left empty. Each kind once from a real
// process (the code and the streams as the shell sees them), the rest through run() in process.
import { freePort } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, start } from "./cli.ts";

/** The one line an error is reported with, or a failure showing everything written. */
function oneErrorLine(r: { stdout: string; stderr: string }): string {
  const lines = r.stderr.split("\n").filter((l) => l !== "");
  expect(lines, r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/^\s+at /m);
  expect(r.stdout).toBe("");
  return lines[0]!;
}

describe("flotilla exit codes", () => {
  const env = useFlotilla("cli-exit");

  it("--help and --version exit 0 and write to stdout", async () => {
    const help = await flotilla(env.prefix, ["--help"], { process: true });
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("Usage: flotilla");
    for (const command of [
      "tasks",
      "task",
      "stream",
      "submit",
      "cancel",
      "retry",
      "queues",
      "dlq",
      "workers",
      "alerts",
      "signal",
      "approve",
      "reject",
      "schedules",
      "runs",
      "bus",
      "watch",
    ]) {
      expect(help.stdout).toMatch(new RegExp(`^  ${command} `, "m"));
    }
    expect(help.stdout).toContain("Exit codes:");
    const version = await flotilla(env.prefix, ["--version"]);
    expect(version.code).toBe(0);
    expect(version.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });

  it("usage errors exit 2: an unknown command or option, a value that does not parse, a missing argument", async () => {
    const cases: string[][] = [
      [],
      ["frob"],
      ["tasks", "--frob"],
      ["tasks", "--limit", "x"],
      ["tasks", "--limit", "0"],
      ["tasks", "--status", "DONE"],
      ["tasks", "--watch", "5"],
      ["tasks", "surplus"],
      ["task"],
      ["stream", "default/x", "--after", "-1"],
      ["signal", "default/x", "go", "{not json"],
      ["submit", "--agent", "a", "hello"],
      ["submit", "--agent", "a", "--model", "scripted:x"],
      ["dlq", "list"],
      ["schedules", "pause"],
    ];
    for (const args of cases) {
      const r = await flotilla(env.prefix, args, { process: args[0] === "frob" });
      expect({ args, code: r.code }, r.stderr).toEqual({ args, code: 2 });
      expect(r.stderr, args.join(" ")).toMatch(/error|Usage/);
    }
  });

  it("an unknown task exits 1 with `no task <id>` (a bare name is in queue default), under --json too", async () => {
    for (const [args, id] of [
      [["task", "x"], "default/x"],
      [["task", "jobs/x"], "jobs/x"],
      [["task", "x", "--json"], "default/x"],
      [["stream", "x"], "default/x"],
      [["cancel", "jobs/nope"], "jobs/nope"],
      [["retry", "nope"], "default/nope"],
      [["approve", "nope"], "default/nope"],
      [["signal", "nope", "go", '{"a":1}'], "default/nope"],
    ] as const) {
      // Under --json too, the error is on stderr and stdout stays empty: as a process, once.
      const r = await flotilla(env.prefix, args, { process: args.at(-1) === "--json" });
      expect(r.code, args.join(" ")).toBe(1);
      expect(oneErrorLine(r)).toBe(`error: no task ${id}`);
    }
  });

  it("Redis down exits 1 with one line naming the Redis, its password hidden", async () => {
    const port = await freePort();
    for (const args of [["tasks"], ["task", "x"], ["queues", "--json"], ["workers"], ["stream", "x"], ["dlq", "list", "q"]]) {
      // As a process once: it exits though its connection would go on retrying.
      const r = await flotilla(env.prefix, ["--redis", `redis://:hunter2@127.0.0.1:${port}`, ...args], { process: args[0] === "tasks" });
      expect(r.code, args.join(" ")).toBe(1);
      const line = oneErrorLine(r);
      expect(line).toMatch(new RegExp(`^error: cannot reach Redis \\(redis://:\\*\\*\\*@127\\.0\\.0\\.1:${port}\\): Redis at 127\\.0\\.0\\.1:${port} `));
      expect(line).not.toContain("hunter2");
    }
  });

  it("REDIS_URL is read when there is no --redis", async () => {
    const port = await freePort();
    const r = await flotilla(env.prefix, ["tasks"], { env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_CLUSTER_NODES: undefined } });
    expect(r.code).toBe(1);
    expect(oneErrorLine(r)).toContain(`127.0.0.1:${port}`);
  });

  it("a refused operation exits 1: a client-side validation error says which field", async () => {
    const r = await flotilla(env.prefix, ["task", "bad queue/x"]);
    expect(r.code).toBe(1);
    expect(oneErrorLine(r)).toMatch(/^error: invalid taskId/);
  });

  it("a reader that goes away (`flotilla tasks --json | head -0`) ends it quietly with 0", async () => {
    const piped = start(env.prefix, ["tasks", "--json"], { process: true });
    // Closed before it writes (it is still loading): its first write fails with EPIPE.
    piped.child!.stdout!.destroy();
    const exit = await piped.exited;
    expect(exit.code, exit.stderr).toBe(0);
    expect(exit.stderr).toBe("");
  });
});
