#!/usr/bin/env node
// Packs every published package (`pnpm pack`, as `changeset publish` does) and checks each tarball as
// a user receives it: the LICENSE is there, what package.json points at (exports, main, types, bin)
// is there, every source map points at sources inside the tarball, README links work on the
// registry, and the manifest names no private workspace package and no `workspace:` range.
// Needs a build first (`pnpm build`); CI runs it after its build. Usage:
//   npm run pack:check [-- <folder to keep the tarballs in>]
// With a folder it keeps the tarballs there and prints the one `npm install` line that installs them
// all into an app outside the repository (before a release, their ^0.0.0 ranges are on no registry).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, normalize, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const keep = process.argv[2] ? resolve(process.argv[2]) : undefined;
const work = mkdtempSync(join(tmpdir(), "flotilla-packs-"));
const out = keep ?? join(work, "tarballs");
mkdirSync(out, { recursive: true });

const pnpm = (args, cwd = root) => execFileSync("pnpm", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
const workspace = JSON.parse(pnpm(["ls", "-r", "--depth", "-1", "--json"]));
const privateNames = new Set(workspace.filter((p) => p.private).map((p) => p.name));
const published = workspace.filter((p) => !p.private && p.name && p.version);

const problems = [];
const problem = (pkg, text) => problems.push(`${pkg}: ${text}`);

/** Every string a manifest's `exports` (or a `bin` map) points at. */
function targets(value) {
  if (typeof value === "string") return [value];
  if (value === null || typeof value !== "object") return [];
  return Object.values(value).flatMap(targets);
}

function filesUnder(dir) {
  return readdirSync(dir, { recursive: true })
    .map((f) => String(f))
    .filter((f) => statSync(join(dir, f)).isFile());
}

const filters = published.flatMap((p) => ["--filter", p.name]);
pnpm(["-r", ...filters, "pack", "--pack-destination", out]);

for (const pkg of published) {
  const tarball = join(out, `${pkg.name.replace(/^@/, "").replace("/", "-")}-${pkg.version}.tgz`);
  if (!existsSync(tarball)) {
    problem(pkg.name, `no tarball at ${tarball}`);
    continue;
  }
  const dir = join(work, "unpacked", pkg.name);
  mkdirSync(dir, { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", dir]);
  const base = join(dir, "package");
  const files = new Set(filesUnder(base).map((f) => normalize(f)));
  const manifest = JSON.parse(readFileSync(join(base, "package.json"), "utf8"));

  if (!files.has("LICENSE")) problem(pkg.name, "no LICENSE");
  if (!files.has("README.md")) problem(pkg.name, "no README.md");
  if (JSON.stringify(manifest).includes("workspace:")) problem(pkg.name, "a workspace: range left in package.json");
  for (const kind of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"]) {
    for (const name of Object.keys(manifest[kind] ?? {})) if (privateNames.has(name)) problem(pkg.name, `${kind} name the private ${name}`);
  }
  for (const target of [...targets(manifest.exports), ...targets(manifest.bin), manifest.main, manifest.types].filter(Boolean)) {
    if (!files.has(normalize(target))) problem(pkg.name, `package.json points at ${target}, which is not in the tarball`);
  }
  for (const file of files) {
    if (file.startsWith("tooling/") || file.includes(".toolchain")) problem(pkg.name, `ships ${file}`);
    if (!file.endsWith(".map")) continue;
    const map = JSON.parse(readFileSync(join(base, file), "utf8"));
    for (const source of map.sources ?? []) {
      const path = normalize(join(dirname(file), map.sourceRoot ?? "", source));
      if (!files.has(path)) problem(pkg.name, `${file} points at ${source}, which is not in the tarball`);
    }
  }
  const readme = files.has("README.md") ? readFileSync(join(base, "README.md"), "utf8") : "";
  for (const [, target] of readme.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    if (/^(https?:|mailto:|#)/.test(target)) continue;
    const path = normalize(target.split("#")[0]);
    if (path.startsWith("..") || !files.has(path)) problem(pkg.name, `README.md links to ${target}, which does not work on the registry`);
  }
  const size = statSync(tarball).size;
  console.log(`${pkg.name}@${pkg.version}: ${files.size} files, ${(size / 1024).toFixed(0)} kB packed`);
  if (size > 1024 * 1024) problem(pkg.name, `the tarball is ${(size / 1024 / 1024).toFixed(1)} MB`);
}

rmSync(join(work, "unpacked"), { recursive: true, force: true });
if (!keep) rmSync(work, { recursive: true, force: true });
if (problems.length > 0) {
  console.error(`\n${problems.length} problem(s) in the packed packages:\n  ${problems.join("\n  ")}`);
  process.exit(1);
}
console.log(`\n${published.length} published packages packed and checked${keep ? `; tarballs in ${relative(process.cwd(), out) || "."}` : ""}.`);
if (keep) {
  // The packages name each other at ^0.0.0, which the registry does not have before a release: given
  // all in one install, npm takes each from its tarball. One line installs them into an outside app.
  const tarballs = published.map((p) => join(out, `${p.name.replace(/^@/, "").replace("/", "-")}-${p.version}.tgz`));
  console.log(`\nTo try them in an app outside this repository (from the app's folder):\n  npm install ${tarballs.join(" ")}`);
}
