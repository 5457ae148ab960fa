// Without a Temporal dev server binary the Temporal tests never skip in silence: on a newcomer's
// machine the run's closing lines count them and give the command that enables them; in CI (`CI`
// set) the run fails. Runs the real Temporal test files in a child vitest, the binary pointed at a
// missing file through FLOTILLA_TEMPORAL_BIN.
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { temporalBinary, waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { runVitest } from "./run-vitest.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const files = ["packages/testing/test/temporal-server.test.ts", "packages/temporal/test/temporal.test.ts"];
const missing = "/nonexistent/flotilla-temporal";
const command = "bash tooling/scripts/temporal.sh";

describe("the Temporal tests without a Temporal binary", () => {
  it("skip on a newcomer's machine, and the closing lines say how many and which command enables them", async () => {
    const r = await runVitest(root, files, { FLOTILLA_TEMPORAL_BIN: missing, FLOTILLA_TEMPORAL_PENDING: undefined, CI: "" });
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
    const r = await runVitest(root, files, { FLOTILLA_TEMPORAL_BIN: missing, FLOTILLA_TEMPORAL_PENDING: undefined, CI: "true" });
    expect(r.code, r.stdout + r.stderr).toBe(1);
    const closing = /^tests: (\d+) passed, (\d+) failed, 0 skipped$/.exec(r.closingLine ?? "");
    expect(closing, r.closingLine).not.toBeNull();
    expect(Number(closing![2])).toBeGreaterThanOrEqual(5);
    const why = `CI is set and there is no Temporal dev server binary (FLOTILLA_TEMPORAL_BIN=${missing} does not exist): run \`${command}\` before the tests`;
    expect(r.lines.filter((l) => l.includes(why) && l.startsWith("  failed outside a test: "))).toHaveLength(files.length);
  }, 120_000);

  describe("while the build runs in the background (FLOTILLA_TEMPORAL_PENDING, set by `npm test` on a new machine)", () => {
    const binary = temporalBinary();
    const statusFile = () => {
      const dir = mkdtempSync(join(tmpdir(), "flotilla-temporal-pending-"));
      dirs.push(dir);
      const file = join(dir, "status");
      writeFileSync(file, "");
      return file;
    };
    const dirs: string[] = [];
    afterAll(() => {
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    });

    it.skipIf(!binary)(
      "wait for it, then run against the binary it built",
      async () => {
        const status = statusFile();
        // Where the build will put the binary: nothing there until it "ends", which it does only once
        // the Temporal tests say they wait for it (`<status>.waiting`): they must wait, neither skip nor fail.
        const target = join(dirname(status), "temporal");
        const run = runVitest(root, ["packages/testing/test/temporal-server.test.ts"], {
          FLOTILLA_TEMPORAL_BIN: target,
          FLOTILLA_TEMPORAL_PENDING: status,
          CI: "true",
        });
        const outcome = await Promise.race([
          run.then(() => "ended" as const),
          waitFor(() => existsSync(`${status}.waiting`), { timeoutMs: 90_000, what: "the tests to wait for the build" }),
        ]);
        expect(outcome, "the run ended without waiting for the build").not.toBe("ended");
        symlinkSync(binary!, target);
        writeFileSync(status, `ok ${target}\n`);
        const r = await run;
        expect(r.code, r.stdout + r.stderr).toBe(0);
        expect(r.closingLine).toMatch(/^tests: [1-9]\d* passed, 0 failed, 0 skipped$/);
      },
      120_000,
    );

    it("fail in CI when it failed, saying so", async () => {
      const status = statusFile();
      writeFileSync(`${status}.log`, "go: downloading…\ngo: module lookup disabled by GOPROXY=off\n");
      writeFileSync(status, `failed ${status}.log\n`);
      const r = await runVitest(root, ["packages/testing/test/temporal-server.test.ts"], {
        FLOTILLA_TEMPORAL_BIN: missing,
        FLOTILLA_TEMPORAL_PENDING: status,
        CI: "true",
      });
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toContain(
        `CI is set and the background build of the Temporal dev server failed: go: downloading… / go: module lookup disabled by GOPROXY=off: run \`${command}\` before the tests`,
      );
    }, 120_000);
  });
});
