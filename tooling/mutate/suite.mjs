// @ts-check
// Runs the whole test suite of a tree (`vitest run`, no bail) with vitest's JSON reporter, and reads
// back which tests failed. The JSON shape (testResults[].assertionResults[]) is the one vitest 3 to 5
// write.
import { spawn } from "node:child_process";
import { createWriteStream, existsSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

/**
 * @typedef {{ code: number | null, timedOut: boolean, ms: number }} SuiteRun
 * @typedef {{ file: string, name: string }} FailedTest
 */

/**
 * `vitest run` in `root` (its own vitest.config.ts: every project, the global setup that builds the
 * Lua) but the files matching `exclude` (globs, relative to each project), results to `jsonFile`,
 * output to `logFile`; killed (its whole process group) after `timeoutMs` or when `signal` aborts.
 * `files`: only these (paths from the root) instead of the whole suite.
 * @param {string} root @param {{ jsonFile: string, logFile: string, env: NodeJS.ProcessEnv, timeoutMs: number, exclude: string[], signal: AbortSignal, files?: string[] }} o
 * @returns {Promise<SuiteRun>}
 */
export function runSuite(root, { jsonFile, logFile, env, timeoutMs, exclude, signal, files = [] }) {
  const cli = join(root, "node_modules", "vitest", "vitest.mjs");
  const args = [cli, "run", ...files, "--reporter=dot", "--reporter=json", `--outputFile.json=${jsonFile}`, ...exclude.flatMap((g) => ["--exclude", g])];
  const started = Date.now();
  const log = createWriteStream(logFile);
  const child = spawn(process.execPath, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  child.stdout.pipe(log, { end: false });
  child.stderr.pipe(log, { end: false });
  // Its own process group (detached), so a timeout or Ctrl-C of ours ends it and every worker it spawned.
  const killGroup = () => {
    try {
      process.kill(-(/** @type {number} */ (child.pid)), "SIGKILL");
    } catch {}
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    killGroup();
  }, timeoutMs);
  signal.addEventListener("abort", killGroup, { once: true });
  return new Promise((resolve) => {
    child.once("close", (code) => {
      clearTimeout(timer);
      signal.removeEventListener("abort", killGroup);
      killGroup(); // whatever the run left behind (workers it did not stop) goes with it
      log.end();
      resolve({ code, timedOut, ms: Date.now() - started });
    });
  });
}

/**
 * The failed tests of a run, by file (relative to `root`) and full name. A file that failed with no
 * failed test in it (an import error, a failed beforeAll whose tests were skipped, a failed afterAll)
 * counts as one failed test named "(the file itself)".
 * @param {string} jsonFile @param {string} root @returns {{ failed: FailedTest[], total: number } | undefined}
 */
export function readFailures(jsonFile, root) {
  if (!existsSync(jsonFile)) return undefined;
  const report = JSON.parse(readFileSync(jsonFile, "utf8"));
  /** @type {FailedTest[]} */
  const failed = [];
  let total = 0;
  for (const file of report.testResults ?? []) {
    const rel = relative(root, file.name);
    const tests = file.assertionResults ?? [];
    total += tests.length;
    const failing = tests.filter((/** @type {{ status: string }} */ t) => t.status === "failed");
    for (const t of failing) failed.push({ file: rel, name: t.fullName ?? t.title });
    if (file.status === "failed" && failing.length === 0) failed.push({ file: rel, name: "(the file itself)" });
  }
  return { failed, total };
}
