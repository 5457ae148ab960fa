// @ts-check
// `pnpm mutate lua [id …]`: breaks the Lua scripts on purpose, one guard at a time (the list in
// lua-breakages.json), and runs the whole test suite against each breakage to see which tests notice.
// Each breakage runs in a throwaway copy of the repository (tree-copy.mjs), never the working tree,
// with a private redis-server when one is on PATH. TESTING.md explains the verdicts.
import { mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { applyBreakage, BreakageError, checkBreakages, loadBreakages, selectBreakages } from "./breakages.mjs";
import { hasRedisServer, startPrivateRedis } from "./private-redis.mjs";
import { consoleTable, judge, loadResults, markdownTable, rewriteSection, saveResults } from "./report.mjs";
import { readFailures, runSuite } from "./suite.mjs";
import { copyRepo, removeCopy } from "./tree-copy.mjs";

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, "../..");
export const DEFAULT_LIST = join(HERE, "lua-breakages.json");
/**
 * Test files left out of the runs: the check of the breakage list itself fails in any broken copy
 * (its search string is gone), which says nothing about the guard.
 */
export const NOT_RUN = ["**/lua-breakages.test.ts"];

export const USAGE = `pnpm mutate lua [id …] [options]

Breaks each Lua guard listed in tooling/mutate/lua-breakages.json (or only the ids given), runs the
whole test suite against it in a temporary copy of the repository, and reports which tests failed.

  --list              list the breakages and exit
  --check             only check that every breakage applies and changes a built script (seconds)
  --table             only rewrite the results' markdown and TESTING.md's table from the saved results
  --no-baseline       skip the first run on the unbroken copy (which must pass)
  --known-catchers    for a breakage with saved results, run only the test files that caught it
                      last time; the whole suite only when they no longer catch it as required (or
                      it has no saved results). Checks that nothing catches less, in minutes a
                      breakage instead of a whole suite each
  --keep              keep the temporary copies (their paths are printed)
  --timeout <min>     give up on one suite run after this long (default 30)
  --redis <url>       run the suites against this Redis (default: a private redis-server from PATH,
                      else REDIS_URL, else redis://127.0.0.1:6379)
  --breakages <file>  another breakage list (results then go next to it; TESTING.md is left alone)

Results: tooling/mutate/lua-results.json and .md (merged with earlier runs by id), the table in
TESTING.md. Exit 1 when a breakage survived, a fencing one was caught too weakly, or a run failed.`;

/** @param {string[]} argv */
export function parseArgs(argv) {
  const o = {
    ids: /** @type {string[]} */ ([]),
    help: false,
    list: false,
    check: false,
    table: false,
    baseline: true,
    knownCatchers: false,
    keep: false,
    timeoutMin: 30,
    redis: "",
    file: "",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) throw new BreakageError(`${a} needs a value`);
      return v;
    };
    if (a === "--list") o.list = true;
    else if (a === "--check") o.check = true;
    else if (a === "--table") o.table = true;
    else if (a === "--no-baseline") o.baseline = false;
    else if (a === "--known-catchers") o.knownCatchers = true;
    else if (a === "--keep") o.keep = true;
    else if (a === "--timeout") o.timeoutMin = Number(value());
    else if (a === "--redis") o.redis = value();
    else if (a === "--breakages") o.file = resolve(value());
    else if (a === "--help" || a === "-h") o.help = true;
    else if (a.startsWith("--")) throw new BreakageError(`unknown option ${a}\n\n${USAGE}`);
    else o.ids.push(a);
  }
  if (!(o.timeoutMin > 0)) throw new BreakageError("--timeout takes a number of minutes");
  return o;
}

/** The environment of a suite run: this one's, minus what a running vitest set for its workers. */
/** @param {string} redisUrl */
function suiteEnv(redisUrl) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && k !== "TEST" && k !== "NODE_ENV"));
  return { ...env, REDIS_URL: redisUrl, FORCE_COLOR: "0" };
}

/** @param {string} text */
const say = (text) => process.stdout.write(`[mutate lua] ${text}\n`);

/**
 * Runs the suite once in a fresh copy, with `b` applied (or none: the baseline). Returns the run and
 * its failed tests (undefined when the suite wrote no report). `files`: only these test files.
 * @param {import("./breakages.mjs").Breakage | undefined} b
 * @param {{ logs: string, timeoutMin: number, redis: string, keep: boolean, signal: AbortSignal }} o
 * @param {string[]} [files]
 */
async function oneRun(b, o, files = []) {
  const id = `${b?.id ?? "baseline"}${files.length ? "-known" : ""}`;
  const copy = copyRepo(ROOT, id);
  const redis = o.redis
    ? { url: o.redis, stop: async () => {} }
    : hasRedisServer()
      ? await startPrivateRedis()
      : { url: process.env.REDIS_URL || "redis://127.0.0.1:6379", stop: async () => {} };
  try {
    if (b) applyBreakage(copy, b);
    const jsonFile = join(o.logs, `${id}.json`);
    const logFile = join(o.logs, `${id}.log`);
    const run = await runSuite(copy, {
      jsonFile,
      logFile,
      env: suiteEnv(redis.url),
      timeoutMs: o.timeoutMin * 60_000,
      exclude: NOT_RUN,
      signal: o.signal,
      files,
    });
    return { run, report: readFailures(jsonFile, copy), logFile };
  } finally {
    await redis.stop();
    if (o.keep) say(`kept the copy for ${id}: ${copy}`);
    else removeCopy(copy);
  }
}

/** @param {string[]} argv @returns {Promise<number>} the exit code */
export async function main(argv) {
  const o = parseArgs(argv);
  if (o.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const file = o.file || DEFAULT_LIST;
  const { breakages: all, levels } = loadBreakages(file);
  const own = file === DEFAULT_LIST;
  const paths = own
    ? { json: join(HERE, "lua-results.json"), md: join(HERE, "lua-results.md") }
    : { json: file.replace(/\.json$/, "") + "-results.json", md: file.replace(/\.json$/, "") + "-results.md" };
  const writeTable = (/** @type {Map<string, import("./report.mjs").Result>} */ results) => {
    if (own && !rewriteSection(join(ROOT, "TESTING.md"), markdownTable(all, results)))
      say("TESTING.md has no breakage table markers: its table was not written");
  };

  if (o.list) {
    for (const b of all) process.stdout.write(`${b.id.padEnd(28)} ${b.fencing ? "fence " : "      "}${b.file.replace(/^packages\//, "")}\n    ${b.guard}\n`);
    return 0;
  }
  if (o.table) {
    // Results merged in by hand (runs made elsewhere, with --breakages) show up in both outputs.
    const saved = loadResults(paths.json);
    saveResults(paths, all, saved);
    writeTable(saved);
    say(`${basename(paths.md)} and TESTING.md's table rewritten from the saved results`);
    return 0;
  }
  const selected = selectBreakages(all, o.ids);

  // Every selected breakage must apply and change a built script before any suite runs: a stale
  // search string fails here in seconds, not after an hour of runs.
  const probe = copyRepo(ROOT, "check");
  let scripts;
  try {
    scripts = await checkBreakages(probe, selected);
  } finally {
    removeCopy(probe);
  }
  say(`${selected.length} breakage(s) apply, each changing a built script`);
  if (o.check) return 0;

  const logs = join(tmpdir(), `flotilla-mutate-${new Date().toISOString().replace(/[:.]/g, "-")}`);
  mkdirSync(logs, { recursive: true });
  // Ctrl-C: the running suite (its own process group) is killed, its copy and Redis removed, and what
  // was learnt so far is kept.
  const interrupt = new AbortController();
  const onSignal = () => {
    say("interrupted: stopping the running suite and cleaning up …");
    interrupt.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const run = { ...o, logs, signal: interrupt.signal };
  say(`suite logs and reports: ${logs}`);
  if (o.baseline) {
    say("baseline: the whole suite on an unbroken copy …");
    const base = await oneRun(undefined, run);
    if (interrupt.signal.aborted) return 130;
    const failed = base.report?.failed;
    if (!failed || failed.length > 0) {
      say(`the baseline run is not green (${failed ? `${failed.length} failed` : base.run.timedOut ? "timed out" : "no report"}; see ${base.logFile}):`);
      for (const f of failed ?? []) process.stdout.write(`  ${f.file} › ${f.name}\n`);
      say("fix the suite first (or, knowing why, pass --no-baseline)");
      return 1;
    }
    say(`baseline green: ${base.report?.total} tests in ${Math.round(base.run.ms / 1000)} s`);
  }

  const results = loadResults(paths.json);
  const fresh = new Map();
  for (const [i, b] of selected.entries()) {
    say(`${i + 1}/${selected.length} ${b.id}: ${b.guard}`);
    const before = results.get(b.id);
    const catchers = o.knownCatchers && before?.verdict === "caught" ? [...new Set(before.failed.map((f) => f.file))] : [];
    let outcome;
    let scope = "whole suite";
    if (catchers.length > 0) {
      say(`  the ${catchers.length} file(s) that caught it last time: ${catchers.join(", ")}`);
      const known = await oneRun(b, run, catchers);
      if (interrupt.signal.aborted) break;
      const judged = judge(b, known.report?.failed, levels, known.run);
      if (judged.verdict === "caught") {
        outcome = { ...known, judged };
        scope = "known catchers";
      } else say(`  they no longer catch it as required (${judged.verdict}: ${judged.why}): the whole suite …`);
    }
    if (!outcome) {
      const whole = await oneRun(b, run);
      outcome = { ...whole, judged: judge(b, whole.report?.failed, levels, whole.run) };
    }
    if (interrupt.signal.aborted) break;
    const { run: r, logFile, judged } = outcome;
    const result = { id: b.id, ...judged, scope, scripts: scripts.get(b.id) ?? [], ms: r.ms, at: new Date().toISOString() };
    results.set(b.id, result);
    fresh.set(b.id, result);
    say(`  ${result.verdict.toUpperCase()}: ${result.why} (${Math.round(r.ms / 1000)} s; ${logFile})`);
    // After each, so an interrupted run keeps what it learnt.
    saveResults(paths, all, results);
    writeTable(results);
  }
  process.off("SIGINT", onSignal);
  process.off("SIGTERM", onSignal);
  process.stdout.write(`\n${consoleTable(selected, fresh)}\n\n`);
  say(`results: ${paths.md}`);
  const bad = [...fresh.values()].filter((r) => r.verdict !== "caught");
  if (bad.length) say(`${bad.length} of ${fresh.size} not caught as required: ${bad.map((r) => `${r.id} (${r.verdict})`).join(", ")}`);
  if (interrupt.signal.aborted) return 130;
  return bad.length ? 1 : 0;
}
