#!/usr/bin/env node
// pnpm test:affected [--base <ref>] [--dry] [vitest args…]: the tests of the workspace packages a change
// touches and of every package that depends on them, nothing else. The change is what differs from
// <ref> (default: where HEAD left origin/main, else HEAD) plus what is not committed yet. A change
// outside any package (the root config, the lockfile, the test tooling) runs everything.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Files under these paths change what every test runs with: a change there runs the whole suite. */
export const EVERYTHING = [
  "vitest.config.ts",
  "package.json",
  "pnpm-lock.yaml",
  "pnpm-workspace.yaml",
  "tsconfig.workspace.json",
  "tooling/vitest/",
  "tooling/tsconfig/",
  "tooling/lua/",
];

/** The test helpers every package's tests use (see affectedDirs). */
const TEST_HELPERS = "@flotilla/testing";

/** The workspace's packages: folder, name, and the workspace names it depends on. */
export function workspacePackages(root = ROOT) {
  const dirs = [];
  for (const parent of ["packages", "apps"]) for (const name of readdirSync(join(root, parent)).sort()) dirs.push(`${parent}/${name}`);
  dirs.push("examples", "tooling");
  return dirs
    .filter((dir) => existsSync(join(root, dir, "package.json")))
    .map((dir) => {
      const json = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
      const deps = Object.keys({ ...json.dependencies, ...json.devDependencies, ...json.peerDependencies }).filter((d) => d.startsWith("@flotilla/"));
      return { dir, name: json.name, deps };
    });
}

/**
 * The folders whose tests a change to `changed` (paths from the repository root) must run: the
 * packages the files are in and every package that depends on one of them, directly or not.
 * Returns "everything" for a change outside every package or under EVERYTHING, [] for none.
 * @param {string[]} changed
 * @param {{ dir: string, name: string, deps: string[] }[]} packages
 * @returns {string[] | "everything"}
 */
export function affectedDirs(changed, packages) {
  const touched = new Set();
  for (const file of changed) {
    if (EVERYTHING.some((p) => (p.endsWith("/") ? file.startsWith(p) : file === p))) return "everything";
    const owner = packages.find((p) => file.startsWith(`${p.dir}/`));
    if (owner) touched.add(owner.name);
    else if (!/\.(md|txt)$/.test(file) && !file.startsWith(".changeset/") && !file.startsWith("docs/")) return "everything";
  }
  // Every package that depends on a touched one, to the end of the chain. The test helpers
  // (@flotilla/testing) pass on a change of their own, not one of the packages they drive: nearly
  // every package's tests use them, and through them everything would depend on everything.
  const direct = new Set(touched);
  let grew = true;
  while (grew) {
    grew = false;
    for (const p of packages) {
      if (touched.has(p.name)) continue;
      if (p.deps.some((d) => touched.has(d) && (d !== TEST_HELPERS || direct.has(d)))) {
        touched.add(p.name);
        grew = true;
      }
    }
  }
  return packages.filter((p) => touched.has(p.name)).map((p) => p.dir);
}

function git(args) {
  return execFileSync("git", args, { cwd: ROOT, encoding: "utf8" }).trim();
}

function changedFiles(base) {
  const committed = git(["diff", "--name-only", `${base}...HEAD`]);
  const uncommitted = git(["status", "--porcelain", "--untracked-files=all"])
    .split("\n")
    .filter(Boolean)
    .map((l) => l.slice(3).split(" -> ").pop());
  return [...new Set([...committed.split("\n").filter(Boolean), ...uncommitted])];
}

function defaultBase() {
  try {
    return execFileSync("git", ["merge-base", "HEAD", "origin/main"], { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "HEAD";
  }
}

function main(argv) {
  const args = [...argv];
  let base;
  let dry = false;
  const rest = [];
  while (args.length > 0) {
    const a = args.shift();
    if (a === "--base") base = args.shift();
    else if (a === "--dry") dry = true;
    else rest.push(a);
  }
  base ??= defaultBase();
  const changed = changedFiles(base);
  const dirs = affectedDirs(changed, workspacePackages());
  if (dirs === "everything") console.error(`[test:affected] ${changed.length} files changed since ${base.slice(0, 12)}, some outside any package: every test`);
  else if (dirs.length === 0) {
    console.error(`[test:affected] nothing that a test covers changed since ${base.slice(0, 12)}`);
    return 0;
  } else console.error(`[test:affected] ${changed.length} files changed since ${base.slice(0, 12)}: the tests of ${dirs.join(", ")}`);
  const filters = dirs === "everything" ? [] : dirs.map((d) => `${d}/`);
  if (dry) {
    console.log(filters.join(" "));
    return 0;
  }
  const r = spawnSync("bash", [join(ROOT, "tooling/scripts/flotilla.sh"), "test", ...filters, ...rest], { stdio: "inherit", cwd: ROOT });
  return r.status ?? 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exit(main(process.argv.slice(2)));
