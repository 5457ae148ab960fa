// The closing line of a run (tooling/vitest/summary-reporter.ts) counts a failed setup as a failure,
// not as green "skipped" tests: vitest runs a tiny fixture project in a child process.
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runVitest } from "./run-vitest.ts";

const fixtures = fileURLToPath(new URL("./fixtures/reporter/", import.meta.url));
// CI asks for the slowest files (FLOTILLA_TEST_SLOWEST): these runs must not inherit that.
const run = (...files: string[]) => runVitest(fixtures, ["--config", "vitest.config.ts", ...files], { FLOTILLA_TEST_SLOWEST: undefined });

describe("the summary reporter", () => {
  it("counts the tests of a suite whose beforeAll threw as failed, and says why, last", async () => {
    const r = await run("setup-fails");
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.closingLine).toBe("tests: 1 passed, 2 failed, 0 skipped");
    expect(r.lines.at(-1)).toBe(r.closingLine);
    expect(r.lines).toContainEqual(
      expect.stringMatching(/setup-fails\.spec-fixture\.ts > a suite whose setup throws: setup exploded \(its 2 tests did not run/),
    );
  }, 60_000);

  it("counts a failing test as failed and skipped tests as skipped, with the note a test skipped with", async () => {
    const r = await run("plain");
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.closingLine).toBe("tests: 1 passed, 1 failed, 2 skipped");
    expect(r.lines.at(-2)).toBe("  1 skipped: needs a thing: run `make thing` to enable");
  }, 60_000);

  it("counts a failed afterAll and a file that could not be imported as one failure each", async () => {
    const r = await run("teardown-fails", "import-fails");
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.closingLine).toBe("tests: 1 passed, 2 failed, 0 skipped");
    expect(r.lines).toContainEqual(expect.stringMatching(/teardown exploded \(counted as 1 failed\)/));
    expect(r.lines).toContainEqual(expect.stringMatching(/import-fails\.spec-fixture\.ts: .*no-such-module\.ts.* \(counted as 1 failed\)/));
  }, 60_000);

  it("names the slowest files with their durations when FLOTILLA_TEST_SLOWEST asks, before the closing line", async () => {
    const r = await runVitest(fixtures, ["--config", "vitest.config.ts", "plain", "teardown-fails"], { FLOTILLA_TEST_SLOWEST: "1" });
    expect(r.lines.at(-1)).toBe(r.closingLine);
    const at = r.lines.indexOf("  the 1 slowest files (wall clock, s):");
    expect(at, r.stdout).toBeGreaterThan(-1);
    expect(r.lines[at + 1]).toMatch(/^\s+\d+\.\d {2}(plain|teardown-fails)\.spec-fixture\.ts$/);
    expect(r.lines[at + 2]).not.toMatch(/spec-fixture\.ts$/);
    const quiet = await run("plain");
    expect(quiet.lines.some((l) => l.includes("slowest files"))).toBe(false);
  }, 60_000);
});
