// @ts-check
// What a breakage run came to: a verdict per breakage, the table printed at the end, the results
// file (JSON, merged with earlier runs by id), its markdown view, and the table in TESTING.md.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { levelOf } from "./breakages.mjs";

/**
 * @typedef {import("./breakages.mjs").Breakage} Breakage
 * @typedef {import("./breakages.mjs").Levels} Levels
 * @typedef {import("./suite.mjs").FailedTest} FailedTest
 * @typedef {"caught" | "survived" | "weak" | "error"} Verdict
 * @typedef {{ id: string, verdict: Verdict, why: string, failed: (FailedTest & { level: string })[], scripts: string[], ms: number, at: string, scope?: string }} Result
 */

/**
 * caught: at least one test failed (a fencing breakage: at least 2, one unit-level and one
 * process-level); weak: a fencing breakage caught by fewer; survived: no test failed; error: the
 * run could not tell (timed out, no report).
 * @param {Breakage} b @param {FailedTest[] | undefined} failed @param {Levels} levels @param {{ timedOut: boolean }} run
 * @returns {{ verdict: Verdict, why: string, failed: (FailedTest & { level: string })[] }}
 */
export function judge(b, failed, levels, run) {
  if (!failed) return { verdict: "error", why: run.timedOut ? "the suite timed out" : "the suite wrote no report", failed: [] };
  const classified = failed.map((f) => ({ ...f, level: levelOf(levels, f.file) }));
  if (classified.length === 0) return { verdict: "survived", why: "no test failed", failed: classified };
  if (!b.fencing) return { verdict: "caught", why: `${classified.length} failed`, failed: classified };
  const unit = classified.filter((f) => f.level === "unit").length;
  const proc = classified.filter((f) => f.level === "process").length;
  const missing = [classified.length < 2 && "fewer than 2 tests", unit === 0 && "no unit-level test", proc === 0 && "no process-level test"].filter(Boolean);
  if (missing.length) return { verdict: "weak", why: `fencing: ${missing.join(", ")}`, failed: classified };
  return { verdict: "caught", why: `${classified.length} failed (${unit} unit, ${proc} process)`, failed: classified };
}

/** "unit: store/test/task-store.test.ts (2); process: …": the failed tests by level and file. */
/** @param {Result | undefined} r @returns {string} */
export function caughtBy(r) {
  if (!r) return "not run yet";
  if (r.verdict === "error") return `error: ${r.why}`;
  if (r.failed.length === 0) return "**nothing** (survived)";
  /** @type {Map<string, Map<string, number>>} */
  const byLevel = new Map();
  for (const f of r.failed) {
    const files = byLevel.get(f.level) ?? new Map();
    const short = f.file.replace(/^packages\//, "");
    files.set(short, (files.get(short) ?? 0) + 1);
    byLevel.set(f.level, files);
  }
  const parts = ["unit", "process", "other"]
    .filter((l) => byLevel.has(l))
    .map((l) => `${l}: ${[.../** @type {Map<string, number>} */ (byLevel.get(l))].map(([file, n]) => `${file} (${n})`).join(", ")}`);
  return `${r.verdict === "weak" ? `**weak** (${r.why}) — ` : ""}${parts.join("; ")}`;
}

/** The script a breakage edits, as `<package>/<file under lua/>`. */
/** @param {Breakage} b */
const scriptOf = (b) => b.file.replace(/^packages\/([^/]+)\/lua\//, "$1/");

/** A markdown table cell: no pipes or line breaks. */
/** @param {string} s */
const cell = (s) => s.replace(/\|/g, "\\|").replace(/\n/g, " ");

/** The breakage table, with what caught each (from `results`). */
/** @param {Breakage[]} breakages @param {Map<string, Result>} results @returns {string} */
export function markdownTable(breakages, results) {
  const rows = breakages.map((b) => `| \`${b.id}\` | ${cell(b.guard)} | ${scriptOf(b)} | ${b.fencing ? "yes" : ""} | ${cell(caughtBy(results.get(b.id)))} |`);
  return ["| id | guard | script | fencing | caught by |", "|---|---|---|---|---|", ...rows].join("\n");
}

/** Results saved by earlier runs, by id. */
/** @param {string} path @returns {Map<string, Result>} */
export function loadResults(path) {
  if (!existsSync(path)) return new Map();
  const doc = JSON.parse(readFileSync(path, "utf8"));
  return new Map((doc.results ?? []).map((/** @type {Result} */ r) => [r.id, r]));
}

/**
 * Writes the results (those of this run over those saved before) as JSON and as markdown, in the
 * order of the breakage list; results of ids no longer listed are dropped.
 * @param {{ json: string, md: string }} paths @param {Breakage[]} breakages @param {Map<string, Result>} results
 */
export function saveResults(paths, breakages, results) {
  const ordered = breakages.map((b) => results.get(b.id)).filter((r) => r !== undefined);
  writeFileSync(paths.json, `${JSON.stringify({ results: ordered }, null, 2)}\n`);
  const run = ordered.length;
  const lines = [
    "# Lua breakages: what caught them",
    "",
    `Written by \`pnpm mutate lua\` (tooling/mutate/lua.mjs) with \`${basename(paths.json)}\`; see TESTING.md for how to read it.`,
    `${run} of ${breakages.length} breakages have a result; each row says when it was run.`,
    "",
    "| id | verdict | caught by | when | suite |",
    "|---|---|---|---|---|",
    ...breakages.map((b) => {
      const r = results.get(b.id);
      if (!r) return `| \`${b.id}\` | not run yet | | | |`;
      return `| \`${b.id}\` | ${r.verdict} | ${cell(caughtBy(r))} | ${r.at.slice(0, 16).replace("T", " ")} | ${Math.round(r.ms / 1000)} s |`;
    }),
    "",
    "## Failed tests per breakage",
    "",
    ...ordered.flatMap((r) => [
      `### \`${r.id}\` (${r.verdict}: ${r.why})`,
      "",
      ...(r.failed.length ? r.failed.map((f) => `- ${f.level}: ${f.file} › ${f.name}`) : ["- none"]),
      "",
    ]),
  ];
  writeFileSync(paths.md, `${lines.join("\n").trimEnd()}\n`);
}

export const TABLE_START = "<!-- lua-breakages:start (written by `pnpm mutate lua`) -->";
export const TABLE_END = "<!-- lua-breakages:end -->";

/** Replaces the table between the markers in `file` (TESTING.md); false when the markers are missing. */
/** @param {string} file @param {string} table @returns {boolean} */
export function rewriteSection(file, table) {
  const text = readFileSync(file, "utf8");
  const start = text.indexOf(TABLE_START);
  const end = text.indexOf(TABLE_END);
  if (start < 0 || end < start) return false;
  const next = `${text.slice(0, start + TABLE_START.length)}\n${table}\n${text.slice(end)}`;
  if (next !== text) writeFileSync(file, next);
  return true;
}

/** The table printed at the end of a run. */
/** @param {Breakage[]} breakages @param {Map<string, Result>} results @returns {string} */
export function consoleTable(breakages, results) {
  const rows = breakages.map((b) => {
    const r = results.get(b.id);
    return [b.id, b.fencing ? "fence" : "", r ? r.verdict.toUpperCase() : "-", r ? r.why : "", r ? `${Math.round(r.ms / 1000)}s` : ""];
  });
  const head = ["breakage", "kind", "verdict", "why", "suite"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (/** @type {string[]} */ r) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join("  ")
      .trimEnd();
  return [line(head), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
