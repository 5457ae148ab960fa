import { relative } from "node:path";
import type { Reporter, TestCase, TestModule, TestSuite } from "vitest/node";

/** What the closing lines are made of; `summarize` computes it, the reporter prints it. */
export interface RunSummary {
  passed: number;
  /** Failed tests, tests that did not run because a hook of theirs failed, other hook or file failures, and unhandled errors. */
  failed: number;
  skipped: number;
  /** One line per file or suite whose own hooks (or import) failed: where, the first error, what it cost. */
  brokenSetups: string[];
  /** Skipped tests by the note they were skipped with (`ctx.skip(note)`): how to enable them. */
  skippedByNote: Map<string, number>;
  /** Every file with its wall-clock duration (ms), slowest first: where a run's time goes. */
  durations: Array<{ file: string; ms: number }>;
}

const firstLine = (text: string | undefined) => (text ?? "").split("\n")[0];

/** The suite or file whose own errors (a failed `beforeAll`, a failed import) kept `test` from running, if any. */
function brokenAncestor(test: TestCase): TestSuite | TestModule | undefined {
  for (let p: TestSuite | TestModule = test.parent; ; p = p.parent) {
    if (p.errors().length > 0) return p;
    if (p.type === "module") return undefined;
  }
}

/**
 * Counts a run the way a CI reader means it. A test vitest reports as skipped because its file's or
 * suite's `beforeAll` threw did not pass and was not deliberately skipped: it counts as failed. A
 * failed hook or file that left no test unrun (an `afterAll`, an import error) counts as one failure.
 * Only the APIs vitest 3 to 5 share (`TestModule`, `TestCase.result()`, `errors()`).
 */
export function summarize(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>, root = process.cwd()): RunSummary {
  const summary: RunSummary = { passed: 0, failed: unhandledErrors.length, skipped: 0, brokenSetups: [], skippedByNote: new Map(), durations: [] };
  for (const mod of modules) {
    summary.durations.push({ file: relative(root, mod.moduleId), ms: Math.round(mod.diagnostic().duration) });
    const notRun = new Map<TestSuite | TestModule, number>();
    for (const test of mod.children.allTests()) {
      const result = test.result();
      if (result.state === "passed") summary.passed++;
      else if (result.state === "failed") summary.failed++;
      else {
        // Deliberately skipped: `.skip`, `.todo`, `.skipIf`, filtered out, or `ctx.skip()` in the test or a hook.
        const deliberate = test.options.mode !== "run" || (result.state === "skipped" && result.note !== undefined);
        const broken = deliberate ? undefined : brokenAncestor(test);
        if (broken) {
          summary.failed++;
          notRun.set(broken, (notRun.get(broken) ?? 0) + 1);
          continue;
        }
        summary.skipped++;
        const note = result.state === "skipped" ? result.note : undefined;
        if (note) summary.skippedByNote.set(note, (summary.skippedByNote.get(note) ?? 0) + 1);
      }
    }
    for (const owner of [mod, ...mod.children.allSuites()]) {
      const errors = owner.errors();
      if (errors.length === 0) continue;
      const where = owner.type === "module" ? relative(root, owner.moduleId) : `${relative(root, owner.module.moduleId)} > ${owner.fullName}`;
      const count = notRun.get(owner) ?? 0;
      if (count === 0) summary.failed++;
      const consequence = count ? `its ${count} test${count === 1 ? "" : "s"} did not run: counted as failed` : "counted as 1 failed";
      summary.brokenSetups.push(`${where}: ${firstLine(errors[0]?.message)} (${consequence})`);
    }
  }
  summary.durations.sort((a, b) => b.ms - a.ms);
  return summary;
}

/** How many of the slowest files the closing lines name: `FLOTILLA_TEST_SLOWEST` (CI sets 20), else none. */
export function slowestCount(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number.parseInt(env.FLOTILLA_TEST_SLOWEST ?? "", 10);
  return Number.isFinite(n) && n > 0 ? n : 0;
}

/** The closing lines: what failed outside a test, why tests were skipped, and last `tests: N passed, N failed, N skipped`. */
export function formatSummary(s: RunSummary, slowest = 0): string {
  const listed = s.durations.slice(0, slowest);
  const lines = [
    ...(listed.length > 0 ? [`  the ${listed.length} slowest files (wall clock, s):`] : []),
    ...listed.map(({ file, ms }) => `  ${(ms / 1000).toFixed(1).padStart(7)}  ${file}`),
    ...s.brokenSetups.map((b) => `  failed outside a test: ${b}`),
    ...[...s.skippedByNote].map(([note, n]) => `  ${n} skipped: ${note}`),
    `tests: ${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`,
  ];
  return `\n${lines.join("\n")}\n`;
}

/** Prints one plain closing line, `tests: N passed, N failed, N skipped`, that CI readers understand, after what explains it. */
export default class SummaryReporter implements Reporter {
  async onTestRunEnd(modules: ReadonlyArray<TestModule>, errors: ReadonlyArray<unknown>): Promise<void> {
    const text = formatSummary(summarize(modules, errors), slowestCount());
    // Last: vitest 3's default reporter prints its own summary right after this hook is called (in onFinished).
    await new Promise((resolve) => setImmediate(resolve));
    process.stdout.write(text);
  }
}
