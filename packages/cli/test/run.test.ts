// `run(argv, io)` in process: the same command line with the streams and environment a caller gives,
// which is how colour on a terminal, NO_COLOR and the option defaults are checked.
import { EXIT, resolveGlobals, run } from "@flotilla/cli";
import { scripted, testRedisEnv } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { flotilla, json } from "./cli.ts";

/** A stream that keeps what is written; a terminal when `tty`. */
function capture(tty = false) {
  const chunks: string[] = [];
  return { isTTY: tty, write: (text: string) => chunks.push(text), text: () => chunks.join("") };
}

const ESC = "\x1b[";

describe("run(argv, io)", () => {
  const env = useFlotilla("cli-run");
  const base = () => ({ ...testRedisEnv(), FLOTILLA_PREFIX: env.prefix });

  async function runIn(argv: string[], options: { tty?: boolean; env?: Record<string, string> } = {}) {
    const stdout = capture(options.tty);
    const stderr = capture(options.tty);
    const code = await run(argv, { stdout, stderr, env: { ...base(), ...options.env } });
    return { code, stdout: stdout.text(), stderr: stderr.text() };
  }

  it("colours a terminal's tables, and nothing under NO_COLOR, off a terminal or with --json", async () => {
    await env.worker({ queues: ["cli-run"] });
    await env.until(await env.submit(scripted("a"), "x", { queue: "cli-run" }));
    const tty = await runIn(["tasks"], { tty: true });
    expect(tty.code).toBe(0);
    expect(tty.stdout).toContain(`${ESC}1m`); // the header, bold
    expect(tty.stdout).toContain(`${ESC}32mCOMPLETED`);
    for (const plain of [
      await runIn(["tasks"], { tty: true, env: { NO_COLOR: "1" } }),
      await runIn(["tasks"], { tty: true, env: { TERM: "dumb" } }),
      await runIn(["tasks"]),
      await runIn(["tasks", "--json"], { tty: true }),
    ]) {
      expect(plain.code).toBe(0);
      expect(plain.stdout).toContain("COMPLETED");
      expect(plain.stdout).not.toContain(ESC);
    }
  });

  it("resolves with the exit code and never throws: usage 2, failure 1", async () => {
    expect((await runIn(["--nope"])).code).toBe(EXIT.USAGE);
    const missing = await runIn(["task", "x"]);
    expect(missing).toEqual({ code: EXIT.FAILURE, stdout: "", stderr: "error: no task default/x\n" });
    expect((await runIn(["tasks", "--json"])).code).toBe(EXIT.OK);
  });

  it("--prefix wins over FLOTILLA_PREFIX, which wins over the default", async () => {
    const id = await env.submit(scripted("a"), "x", { queue: "cli-run-prefix" });
    const elsewhere = await flotilla("cli-run-some-other-prefix", ["task", id]);
    expect(elsewhere.code).toBe(1);
    const flagged = await flotilla("cli-run-some-other-prefix", ["--prefix", env.prefix, "task", id]);
    expect(flagged.code, flagged.stderr).toBe(0);
    expect(await json(env.prefix, ["task", id])).toMatchObject({ taskId: id, status: "PENDING" });
  });

  it("the defaults: REDIS_URL, else redis://127.0.0.1:6379; FLOTILLA_PREFIX, else flotilla; a password is never shown", () => {
    expect(resolveGlobals({}, {})).toEqual({
      redis: "redis://127.0.0.1:6379",
      cluster: undefined,
      redisLabel: "redis://127.0.0.1:6379",
      prefix: "flotilla",
      json: false,
    });
    expect(resolveGlobals({}, { REDIS_URL: "redis://h:1", FLOTILLA_PREFIX: "p" })).toMatchObject({ redis: "redis://h:1", prefix: "p" });
    expect(resolveGlobals({ redis: "redis://u:secret@h:2/0", prefix: "q", json: true }, { REDIS_URL: "redis://h:1", FLOTILLA_PREFIX: "p" })).toEqual({
      redis: "redis://u:secret@h:2/0",
      cluster: undefined,
      redisLabel: "redis://u:***@h:2/0",
      prefix: "q",
      json: true,
    });
    // A cluster named in the environment the command is given (not only the process's) comes before REDIS_URL.
    expect(resolveGlobals({}, { REDIS_CLUSTER_NODES: "h:1,h:2", REDIS_URL: "redis://h:1" })).toMatchObject({
      redis: undefined,
      cluster: [
        { host: "h", port: 1 },
        { host: "h", port: 2 },
      ],
    });
  });
});
