// Without a Temporal dev server binary the Temporal tests never skip in silence: on a newcomer's
// machine the run's closing lines count them and give the command that enables them; in CI (`CI`
// set) the run fails. Runs the real Temporal test files in a child vitest, the binary pointed at a
// missing file through FLOTILLA_TEMPORAL_BIN.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { runVitest } from "./run-vitest.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const files = ["packages/testing/test/temporal-server.test.ts", "packages/temporal/test/temporal.test.ts"];
const missing = "/nonexistent/flotilla-temporal";
const command = "bash tooling/scripts/temporal.sh";

describe("the Temporal tests without a Temporal binary", () => {
  it("skip on a newcomer's machine, and the closing lines say how many and which command enables them", async () => {
    const r = await runVitest(root, files, { FLOTILLA_TEMPORAL_BIN: missing, CI: "" });
    expect(r.code, r.stdout + r.stderr).toBe(0);
    const closing = /^tests: (\d+) passed, 0 failed, (\d+) skipped$/.exec(r.closingLine ?? "");
    expect(closing, r.closingLine).not.toBeNull();
    const skipped = Number(closing![2]);
    expect(skipped).toBeGreaterThanOrEqual(5);
    expect(r.lines.at(-2)).toBe(
      `  ${skipped} skipped: no Temporal dev server binary: \`${command}\` builds it and enables these tests (in CI they fail instead)`,
    );
    // The command is the one that builds the binary where the tests look for it.
    expect(existsSync(new URL("../scripts/temporal.sh", import.meta.url))).toBe(true);
  }, 120_000);

  it("fail the run in CI, saying why and what to run", async () => {
    const r = await runVitest(root, files, { FLOTILLA_TEMPORAL_BIN: missing, CI: "true" });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const closing = /^tests: (\d+) passed, (\d+) failed, 0 skipped$/.exec(r.closingLine ?? "");
    expect(closing, r.closingLine).not.toBeNull();
    expect(Number(closing![2])).toBeGreaterThanOrEqual(5);
    const why = `CI is set and there is no Temporal dev server binary (FLOTILLA_TEMPORAL_BIN=${missing} does not exist): run \`${command}\` before the tests`;
    expect(r.lines.filter((l) => l.includes(why) && l.startsWith("  failed outside a test: "))).toHaveLength(files.length);
  }, 120_000);
});
