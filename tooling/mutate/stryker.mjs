// `pnpm mutate <target|all>`: mutation testing of the TypeScript packages with Stryker (the Lua side
// is elsewhere). One target at a time, one test process (the machine's cores are shared), and
// incremental: a rerun tests only mutants in code or tests changed since the committed result in
// tooling/mutate/incremental/<target>.json. Results are in tooling/mutate/STRYKER.md.
//
//   node tooling/mutate/stryker.mjs store                 # incremental run of one target
//   node tooling/mutate/stryker.mjs all                   # every target, smallest first
//   node tooling/mutate/stryker.mjs store --force         # test every mutant again
//   node tooling/mutate/stryker.mjs store --with worker   # also judge store's mutants by worker's tests
//   node tooling/mutate/stryker.mjs store --mutate packages/store/src/cursor.ts:10-20
//
// Stryker runs in place (`inPlace`): it mutates the files in the worktree and restores them when it
// ends (do not edit sources during a run). A sandbox copy would not do in this workspace: each
// package's node_modules/@flotilla/* is a pnpm symlink, and Stryker symlinks node_modules into the
// sandbox, so other packages and spawned workers would load the original, unmutated sources.
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Stryker } from "@stryker-mutator/core";
import { buildPackage, luaPackages } from "../lua/build.mjs";
import { LOADED_BY_CHILDREN, mutateGlobs, ORDER, SPAWNING_PROJECTS, TARGETS } from "./targets.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const HERE = "tooling/mutate";

/** The Stryker options for one target. `withProjects` widens the tests; `mutate` narrows the mutants. */
export function strykerOptions(target, { withProjects = [], mutate, force = false, concurrency = 1 } = {}) {
  const projects = [...new Set([...TARGETS[target].projects, ...withProjects])];
  // Code run by a spawned worker reports no per-test coverage: test every mutant against every test then.
  const spawned = LOADED_BY_CHILDREN.includes(target) && projects.some((p) => SPAWNING_PROJECTS.includes(p));
  // The committed incremental file describes the default scope; a widened or narrowed run keeps out of it.
  const defaultScope = withProjects.length === 0 && !mutate;
  return {
    testRunner: "vitest",
    // pnpm keeps the runner out of core's node_modules, where Stryker would look for plugins.
    plugins: [import.meta.resolve("@stryker-mutator/vitest-runner"), import.meta.resolve("./ignore-prose.mjs")],
    ignorers: ["prose"],
    vitest: { configFile: `${HERE}/vitest.config.ts` },
    mutate: mutate ? [mutate] : mutateGlobs(target),
    coverageAnalysis: spawned ? "off" : "perTest",
    inPlace: true,
    // No type checker runs (vitest strips types), so no file needs Stryker's @ts-nocheck: left on, it
    // would rewrite, back up and restore every TypeScript file of the worktree, edits made meanwhile lost.
    disableTypeChecks: false,
    concurrency,
    incremental: defaultScope,
    incrementalFile: `${HERE}/incremental/${target}.json`,
    force,
    // A loaded machine runs the tests slower than the dry run measured them: give mutants room before
    // calling them timeouts (an infinite loop still ends, later).
    timeoutMS: 10_000,
    timeoutFactor: 2,
    dryRunTimeoutMinutes: 15,
    reporters: ["clear-text", "progress-append-only", "html", "json"],
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    htmlReporter: { fileName: `reports/mutation/${target}.html` },
    jsonReporter: { fileName: `reports/mutation/${target}.json` },
    tempDirName: ".stryker-tmp",
    cleanTempDir: "always",
    fileLogLevel: "off",
    logLevel: "info",
  };
}

function summarize(results) {
  const counts = {};
  for (const r of results) counts[r.status] = (counts[r.status] ?? 0) + 1;
  const killed = (counts.Killed ?? 0) + (counts.Timeout ?? 0);
  const valid = killed + (counts.Survived ?? 0) + (counts.NoCoverage ?? 0);
  return { score: valid === 0 ? 100 : (100 * killed) / valid, counts };
}

async function runTarget(target, opts) {
  const projects = [...TARGETS[target].projects, ...opts.withProjects];
  process.env.FLOTILLA_MUTATE_PROJECTS = projects.join(",");
  // The built scripts (src/generated) are not mutated, and a worktree that changed commits may hold
  // stale ones: the dry run then fails outside any test. Build them first, as the test suite does.
  for (const dir of luaPackages()) buildPackage(dir);
  const started = Date.now();
  const results = await new Stryker(strykerOptions(target, opts)).runMutationTest();
  const { score, counts } = summarize(results);
  const minutes = ((Date.now() - started) / 60_000).toFixed(1);
  console.log(`mutate ${target}: score ${score.toFixed(2)} % ${JSON.stringify(counts)} in ${minutes} min`);
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      with: { type: "string" },
      mutate: { type: "string" },
      force: { type: "boolean", default: false },
      concurrency: { type: "string", default: "1" },
    },
  });
  const [arg = "all"] = positionals;
  const targets = arg === "all" ? ORDER : [arg];
  const unknown = targets.filter((t) => !(t in TARGETS));
  if (unknown.length > 0) {
    console.error(`mutate: unknown target ${unknown.join(", ")}; one of: all, ${ORDER.join(", ")}`);
    process.exit(2);
  }
  process.chdir(ROOT);
  const opts = {
    withProjects: values.with ? values.with.split(",") : [],
    mutate: values.mutate,
    force: values.force,
    concurrency: Number(values.concurrency),
  };
  for (const target of targets) await runTarget(target, opts);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
