// @ts-check
// A throwaway copy of the repository to break things in, never the working tree: every file git
// knows of (tracked, or untracked and not ignored) copied as a new file, each workspace package's
// node_modules rebuilt with its own (relative) links, so workspace packages resolve inside the copy,
// and the root node_modules' entries linked to the real ones (third-party code is never broken).
// About 1.5 MB and a second; no install, no network.
import { execFileSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

/** Caches of tools that must not be shared between the copy and the working tree. */
const SKIP_IN_NODE_MODULES = new Set([".vite", ".vitest", ".cache"]);

/** What a tree that is not a git checkout (a copy made here) holds besides its files. */
const NOT_SOURCE = new Set(["node_modules", ".git", "dist", ".turbo", "coverage", "generated", ".toolchain"]);

/** Every file under `dir` except NOT_SOURCE folders, relative to `root`. */
/** @param {string} root @param {string} [dir] @returns {string[]} */
function walk(root, dir = "") {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = dir ? `${dir}/${e.name}` : e.name;
    if (e.isDirectory()) return NOT_SOURCE.has(e.name) ? [] : walk(root, rel);
    return [rel];
  });
}

/**
 * The repository's files as git sees them: tracked (unless deleted) and untracked-but-not-ignored.
 * A tree that is no git checkout (a copy of one, where the suite runs this code's own tests) is walked instead.
 * @param {string} root @returns {string[]}
 */
export function repoFiles(root) {
  if (!existsSync(join(root, ".git"))) return walk(root);
  const out = execFileSync("git", ["-C", root, "ls-files", "-co", "--exclude-standard", "-z"], { encoding: "utf8", maxBuffer: 64 << 20 });
  return [...new Set(out.split("\0").filter(Boolean))];
}

/**
 * Copies the repository at `root` into a new temporary folder and returns its path.
 * @param {string} root @param {string} [label] @returns {string}
 */
export function copyRepo(root, label = "copy") {
  const dest = mkdtempSync(join(tmpdir(), `flotilla-mutate-${label.replace(/[^\w-]/g, "_")}-`));
  const packageDirs = new Set();
  for (const rel of repoFiles(root)) {
    const from = join(root, rel);
    let stat;
    try {
      stat = lstatSync(from);
    } catch {
      continue; // tracked but deleted in the working tree
    }
    const to = join(dest, rel);
    mkdirSync(dirname(to), { recursive: true });
    if (stat.isSymbolicLink()) symlinkSync(readlinkSync(from), to);
    else if (stat.isFile()) copyFileSync(from, to);
    if (rel.endsWith("package.json") && dirname(rel) !== ".") packageDirs.add(dirname(rel));
  }
  // A package's node_modules holds links only (pnpm): relative ones to workspace packages (kept
  // relative, so they point into the copy) and to ../../node_modules/.pnpm (the root's, below).
  for (const dir of packageDirs) {
    const nm = join(root, dir, "node_modules");
    if (!existsSync(nm)) continue;
    cpSync(nm, join(dest, dir, "node_modules"), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => !SKIP_IN_NODE_MODULES.has(src.slice(nm.length + 1).split("/")[0] ?? ""),
    });
  }
  const rootModules = join(root, "node_modules");
  mkdirSync(join(dest, "node_modules"), { recursive: true });
  for (const entry of readdirSync(rootModules)) {
    if (SKIP_IN_NODE_MODULES.has(entry)) continue;
    symlinkSync(join(rootModules, entry), join(dest, "node_modules", entry));
  }
  return dest;
}

/** @param {string} dir */
export function removeCopy(dir) {
  rmSync(dir, { recursive: true, force: true });
}
