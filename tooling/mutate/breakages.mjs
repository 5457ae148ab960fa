// @ts-check
// The list of deliberate Lua breakages (lua-breakages.json): reading it, applying one to a copy of
// the repository, and checking that it changed a built script, so no breakage can be a silent no-op
// because its search string went stale or its file is included by no script.
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

/**
 * @typedef {{ id: string, file: string, search: string, replace: string, guard: string, fencing: boolean }} Breakage
 * @typedef {{ unit: string[], process: string[] }} Levels
 * @typedef {{ breakages: Breakage[], levels: Levels }} BreakageList
 */

export class BreakageError extends Error {}

/** @param {string} path @returns {BreakageList} */
export function loadBreakages(path) {
  const doc = JSON.parse(readFileSync(path, "utf8"));
  const seen = new Set();
  for (const b of doc.breakages ?? []) {
    for (const field of ["id", "file", "search", "replace", "guard"]) {
      if (typeof b[field] !== "string" || b[field] === "") throw new BreakageError(`${path}: breakage ${b.id ?? "?"} needs a non-empty "${field}"`);
    }
    if (typeof b.fencing !== "boolean") throw new BreakageError(`${path}: breakage ${b.id} needs "fencing": true or false`);
    if (!/^[a-z0-9-]+$/.test(b.id)) throw new BreakageError(`${path}: breakage id "${b.id}" must be lower-case words joined by -`);
    if (seen.has(b.id)) throw new BreakageError(`${path}: breakage id "${b.id}" is used twice`);
    if (b.search === b.replace) throw new BreakageError(`${path}: breakage ${b.id} replaces its search string with itself`);
    seen.add(b.id);
  }
  const levels = doc.levels ?? {};
  return { breakages: doc.breakages ?? [], levels: { unit: levels.unit ?? [], process: levels.process ?? [] } };
}

/** `unit`, `process` or `other`, for a test file path relative to the repository root. */
/** @param {Levels} levels @param {string} file @returns {"unit" | "process" | "other"} */
export function levelOf(levels, file) {
  if (levels.unit.some((p) => file.startsWith(p))) return "unit";
  if (levels.process.some((p) => file.startsWith(p))) return "process";
  return "other";
}

/** Picks breakages by id, in the order given; every id must exist. */
/** @param {Breakage[]} all @param {string[]} ids @returns {Breakage[]} */
export function selectBreakages(all, ids) {
  if (ids.length === 0) return all;
  return ids.map((id) => {
    const b = all.find((x) => x.id === id);
    if (!b) throw new BreakageError(`no breakage "${id}"; \`pnpm mutate lua --list\` lists them`);
    return b;
  });
}

/**
 * Applies `b` in the tree at `root`: its search string must occur exactly once in its file. The
 * file is written as a new file (unlinked first), so a copy that shares contents with the working
 * tree through hard links never changes the original. Returns the file's text before.
 * @param {string} root @param {Breakage} b @returns {string}
 */
export function applyBreakage(root, b) {
  const path = join(root, b.file);
  let text;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    throw new BreakageError(`${b.id}: ${b.file} does not exist`);
  }
  const count = text.split(b.search).length - 1;
  if (count !== 1) {
    throw new BreakageError(`${b.id}: the search string occurs ${count} times in ${b.file} (it must occur exactly once): ${JSON.stringify(b.search)}`);
  }
  rmSync(path);
  writeFileSync(
    path,
    text.replace(b.search, () => b.replace),
  );
  return text;
}

/** Puts a file back as it was before `applyBreakage`. */
/** @param {string} root @param {Breakage} b @param {string} original */
export function restoreBreakage(root, b, original) {
  const path = join(root, b.file);
  rmSync(path);
  writeFileSync(path, original);
}

/**
 * Every package's scripts as the tree at `root` builds them (its own tooling/lua/build.mjs), by
 * `<package dir name>/<script>`.
 * @param {string} root @returns {Promise<Map<string, string>>}
 */
export async function builtScripts(root) {
  const build = await import(pathToFileURL(join(root, "tooling", "lua", "build.mjs")).href);
  const out = new Map();
  for (const dir of build.luaPackages()) {
    for (const s of build.buildScripts(dir)) out.set(`${dir.split("/").at(-1)}/${s.name}`, s.lua);
  }
  return out;
}

/**
 * Checks, in the tree at `root`, that each breakage applies (exactly one match) and changes at least
 * one built script; the tree is restored after each. Returns the scripts each one changes, by id.
 * @param {string} root @param {Breakage[]} breakages @returns {Promise<Map<string, string[]>>}
 */
export async function checkBreakages(root, breakages) {
  const before = await builtScripts(root);
  const changed = new Map();
  for (const b of breakages) {
    const original = applyBreakage(root, b);
    try {
      let after;
      try {
        after = await builtScripts(root);
      } catch (err) {
        throw new BreakageError(`${b.id}: the Lua does not build with it: ${/** @type {Error} */ (err).message}`);
      }
      const scripts = [...after].filter(([name, lua]) => before.get(name) !== lua).map(([name]) => name);
      if (scripts.length === 0) throw new BreakageError(`${b.id}: no built script changes (is ${b.file} included by any script?)`);
      changed.set(b.id, scripts);
    } finally {
      restoreBreakage(root, b, original);
    }
  }
  return changed;
}
