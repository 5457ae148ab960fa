// Which tests of a Stryker report killed which mutants, as the markdown table STRYKER.md keeps per
// target: `node tooling/mutate/killed-by.mjs <target> [test file …]`. Reads
// reports/mutation/<target>.json (written by `pnpm mutate <target>`); with test files given, lists
// only their tests (the ones a change added), else every test that killed something.
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const [target, ...only] = process.argv.slice(2);
if (!target) {
  console.error("usage: node tooling/mutate/killed-by.mjs <target> [test file …]");
  process.exit(2);
}
const report = JSON.parse(readFileSync(`${ROOT}reports/mutation/${target}.json`, "utf8"));

/** test id → { file, name } */
const tests = new Map();
for (const [file, { tests: list }] of Object.entries(report.testFiles ?? {})) {
  const rel = relative(ROOT, file.startsWith("/") ? file : `${ROOT}${file}`);
  for (const t of list) tests.set(t.id, { file: rel, name: t.name });
}
const wanted = (file) => only.length === 0 || only.some((o) => file.endsWith(o));

/** test id → Set of "src file:line" it killed */
const kills = new Map();
for (const [file, { mutants }] of Object.entries(report.files)) {
  const src = file.split("/").at(-1);
  for (const m of mutants) {
    if (m.status !== "Killed") continue;
    for (const id of m.killedBy ?? []) {
      const entry = kills.get(id) ?? { count: 0, where: new Set() };
      entry.count++;
      entry.where.add(`${src}:${m.location.start.line}`);
      kills.set(id, entry);
    }
  }
}

const rows = [...kills]
  .map(([id, k]) => ({ ...tests.get(id), ...k }))
  .filter((r) => r.file && wanted(r.file))
  .sort((a, b) => a.file.localeCompare(b.file) || b.count - a.count);
const cell = (s) => String(s).replaceAll("|", "\\|").replaceAll("\n", " ");
console.log("| file | test | mutants killed | where (file:line) |\n|---|---|---|---|");
for (const r of rows) {
  const where = [...r.where];
  const shown = where.slice(0, 12).join(", ") + (where.length > 12 ? ", …" : "");
  console.log(`| \`${r.file.split("/").at(-1)}\` | ${cell(r.name)} | ${r.count} | ${shown} |`);
}
