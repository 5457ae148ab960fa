// Builds a package's Lua scripts into `src/generated/lua.ts`: every `--- @include` expanded, so a
// published package runs exactly the includes it was built with and reads no file at run time.
//
//   node tooling/lua/build.mjs [packageDir ...]   (default: every package under packages/ with a lua/ folder)
//
// The layout it enforces (BullMQ's):
//   lua/<name>-<keys>.lua      a script; the number in its name is its key count, and its header
//                              numbers every KEYS[i] (1..keys; a run as KEYS[i..j]) and ARGV[i] it takes;
//                              its first line says what it does when Redis is full (see SHEBANGS)
//   lua/includes/<fn>.lua      an include: exactly one top-level `local function <fn>(...)`, plus
//                              UPPER_CASE constants; no other module-level state
//   --- @include "<fn>"                   an include of the same package
//   --- @include "@flotilla/<pkg>/<fn>"   an include owned by another package (a declared dependency)
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const INCLUDE = /^---?\s*@include\s+"([^"]+)"\s*$/gm;
const SCRIPT_NAME = /^([a-z][A-Za-z0-9]*)-(\d+)\.lua$/;

export class LuaBuildError extends Error {}

/** @typedef {{ dir: string, name: string, deps: Set<string> }} Pkg */
/** @typedef {{ name: string, numberOfKeys: number, lua: string }} BuiltScript */

/** @param {string} dir @returns {Pkg} */
function readPkg(dir) {
  const json = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  return { dir, name: json.name, deps: new Set([...Object.keys(json.dependencies ?? {}), ...Object.keys(json.devDependencies ?? {})]) };
}

/** The folder of a workspace package another one depends on (pnpm links it under node_modules). */
/** @param {Pkg} from @param {string} name */
function packageDir(from, name) {
  if (!from.deps.has(name)) throw new LuaBuildError(`${from.name} includes Lua from ${name}, which is not among its dependencies`);
  const linked = join(from.dir, "node_modules", name);
  if (!existsSync(linked)) throw new LuaBuildError(`${name} is not installed under ${from.name}: run pnpm install`);
  return realpathSync(linked);
}

/** Checks an include's shape: one function named after the file, constants, nothing else at the top level. */
/** @param {string} path @param {string} text */
export function checkInclude(path, text) {
  const fn = basename(path, ".lua");
  /** @type {string[]} */
  const functions = [];
  for (const line of text.split("\n")) {
    if (line === "" || /^\s/.test(line) || line.startsWith("--") || line === "end" || /^[}\])]/.test(line)) continue;
    const f = /^local function ([A-Za-z_]\w*)\s*\(/.exec(line);
    if (f) {
      functions.push(f[1]);
      continue;
    }
    if (/^local [A-Z][A-Z0-9_]*\s*=/.test(line)) continue;
    throw new LuaBuildError(`${path}: only one function and UPPER_CASE constants may sit at the top level of an include, found: ${line}`);
  }
  if (functions.length !== 1 || functions[0] !== fn) {
    throw new LuaBuildError(
      `${path}: an include defines exactly one top-level function named after its file (${fn}), found: ${functions.join(", ") || "none"}`,
    );
  }
}

/**
 * A script's first line, and so what Redis does with it at `maxmemory` (noeviction). Redis checks
 * a script that declares flags once, before it runs: `#!lua` is refused whole (an OOM error, nothing
 * written) — for what admits new work (a submit, a claim); `#!lua flags=allow-oom` runs — for what
 * finishes, renews or frees work already admitted (a settle, a renewal, a running task's events).
 * A script without flags would be checked only at its first write, and not at all when that write
 * cannot grow memory (a DEL): neither all nor nothing, so every script declares one of the two.
 */
export const SHEBANGS = ["#!lua", "#!lua flags=allow-oom"];

/** Checks a script's first line: one of SHEBANGS. */
/** @param {string} path @param {string} text */
export function checkShebang(path, text) {
  const first = text.slice(0, text.indexOf("\n") + 1 || text.length).trimEnd();
  if (!SHEBANGS.includes(first)) {
    throw new LuaBuildError(
      `${path}: a script's first line says what it does when Redis is full: ${SHEBANGS.map((s) => `"${s}"`).join(" or ")}, found "${first}"`,
    );
  }
}

/** Checks a script's header: KEYS[1..n] each listed once, n matching the file name. */
/** @param {string} path @param {string} text @param {number} keys */
export function checkHeader(path, text, keys) {
  const header = /^(?:#!.*\n)?--\[\[([\s\S]*?)\]\]/.exec(text);
  if (!header) throw new LuaBuildError(`${path}: a script opens with a --[[ ... ]] header listing its KEYS, ARGV and returns`);
  // `KEYS[i]` each, or a run of them as `KEYS[i..j]`.
  const listed = [...header[1].matchAll(/^\s*KEYS\[(\d+)(?:\.\.(\d+))?\]/gm)].flatMap((m) => {
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    return Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i);
  });
  const expected = Array.from({ length: keys }, (_, i) => i + 1);
  if (listed.join(",") !== expected.join(",")) {
    throw new LuaBuildError(`${path}: its header must list KEYS[1] to KEYS[${keys}] in order (the count is in its name), found [${listed.join(", ")}]`);
  }
  if (!/^\s*ARGV\[\d+\]/m.test(header[1]) && /\bARGV\b/.test(text.slice(header[0].length))) {
    throw new LuaBuildError(`${path}: the script reads ARGV but its header numbers none`);
  }
  if (!/^\s*Returns?\b/im.test(header[1])) throw new LuaBuildError(`${path}: its header must say what it returns`);
}

/** Expands the includes of `text` (from package `pkg`), each once per script, depth first. */
/** @param {Pkg} pkg @param {string} text @param {Set<string>} seen @param {string[]} chain @returns {string} */
function expand(pkg, text, seen, chain) {
  return text.replace(INCLUDE, (_, ref) => {
    const qualified = /^(@[^/]+\/[^/]+)\/(\w+)$/.exec(ref);
    const owner = qualified ? readPkg(packageDir(pkg, qualified[1])) : pkg;
    const fn = qualified ? qualified[2] : ref;
    const path = join(owner.dir, "lua", "includes", `${fn}.lua`);
    const id = `${owner.name}/${fn}`;
    if (chain.includes(id)) throw new LuaBuildError(`Lua include cycle: ${[...chain, id].join(" -> ")}`);
    if (seen.has(id)) return `-- (${id}: included above)`;
    if (!existsSync(path)) throw new LuaBuildError(`${pkg.name}: Lua include "${ref}" not found (looked for ${path})`);
    seen.add(id);
    const body = readFileSync(path, "utf8");
    checkInclude(path, body);
    return `-- ${id}\n${expand(owner, body, seen, [...chain, id]).trimEnd()}`;
  });
}

/** Every script of a package, expanded. */
/** @param {string} dir @returns {BuiltScript[]} */
export function buildScripts(dir) {
  const pkg = readPkg(dir);
  const luaDir = join(dir, "lua");
  /** @type {BuiltScript[]} */
  const out = [];
  for (const file of readdirSync(luaDir).sort()) {
    if (!file.endsWith(".lua")) continue;
    const m = SCRIPT_NAME.exec(file);
    if (!m) throw new LuaBuildError(`${pkg.name}: script lua/${file} must be named <camelCaseName>-<key count>.lua`);
    const path = join(luaDir, file);
    const text = readFileSync(path, "utf8");
    checkShebang(path, text);
    checkHeader(path, text, Number(m[2]));
    out.push({ name: m[1], numberOfKeys: Number(m[2]), lua: expand(pkg, text, new Set(), []) });
  }
  return out;
}

/** Writes `src/generated/lua.ts` for a package; returns whether it changed. */
/** @param {string} dir @returns {boolean} */
export function buildPackage(dir) {
  const scripts = buildScripts(dir);
  const lines = [
    "// Generated by tooling/lua/build.mjs from this package's lua/ folder: do not edit (the build and the",
    "// test run make it afresh). Each script's includes are expanded; its key count comes from its file name.",
    'import type { ScriptSource } from "@flotilla/core/redis";',
    "",
    ...scripts.map((s) => `export const ${s.name}: ScriptSource = ${JSON.stringify({ name: s.name, numberOfKeys: s.numberOfKeys, lua: s.lua })};`),
    "",
  ];
  const target = join(dir, "src", "generated", "lua.ts");
  const text = lines.join("\n");
  if (existsSync(target) && readFileSync(target, "utf8") === text) return false;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, text);
  return true;
}

/** Packages of the workspace that hold Lua scripts. */
/** @returns {string[]} */
export function luaPackages() {
  const base = join(ROOT, "packages");
  return readdirSync(base)
    .map((d) => join(base, d))
    .filter((d) => existsSync(join(d, "lua")) && existsSync(join(d, "package.json")));
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dirs = process.argv.slice(2).map((d) => resolve(d));
  try {
    for (const dir of dirs.length ? dirs : luaPackages()) buildPackage(dir);
  } catch (err) {
    if (!(err instanceof LuaBuildError)) throw err;
    process.stderr.write(`lua build: ${err.message}\n`);
    process.exit(1);
  }
}
