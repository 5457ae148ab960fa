#!/usr/bin/env node
// Release check: the published type declarations compile in an outside TypeScript project with
// `skipLibCheck: false`, installed the way users install them — from the packed tarballs, with
// their dependencies and required peers only (no optional peers, no optional dependencies, no
// dev dependencies of ours). Builds, packs every public package, and for each kind of user
// (below) installs what that user installs into a temporary consumer project that imports every
// public entry point of it, and runs tsc there. One project per kind of user, not one for all: a
// type package that one install brings along (webpack's @types/json-schema, with Temporal) would
// hide that another install lacks it.
//
//   node tooling/scripts/check-published-types.mjs [--no-build] [--keep]
//
// Needs the packages' third-party dependencies from the npm registry, or pnpm's store (it runs
// `pnpm install --prefer-offline`). Exits 0 when tsc is happy, 1 with tsc's errors otherwise.
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Entry points that exist for an optional peer's users and need it (`@flotilla/testing/vitest` is vitest's). */
const NEEDS_OPTIONAL_PEER = new Set(["@flotilla/testing/vitest"]);
/** What each kind of user installs; a public package in none of these is checked on its own. */
const CONSUMERS = {
  application: ["@flotilla/client", "@flotilla/agent"],
  worker: [
    "@flotilla/worker",
    "@flotilla/memory",
    "@flotilla/core",
    "@flotilla/broker",
    "@flotilla/store",
    "@flotilla/events",
    "@flotilla/cancel",
    "@flotilla/health",
    "@flotilla/metrics",
  ],
  temporal: ["@flotilla/temporal"],
  "worker-app": ["@flotilla/worker-app"],
  testing: ["@flotilla/testing"],
};

const args = new Set(process.argv.slice(2));
const log = (message) => process.stderr.write(`[check-published-types] ${message}\n`);
const run = (command, argv, cwd) => execFileSync(command, argv, { cwd, stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });

function publicPackages() {
  const dirs = ["packages", "apps"].flatMap((parent) => readdirSync(join(ROOT, parent)).map((name) => join(ROOT, parent, name)));
  return dirs.flatMap((dir) => {
    let manifest;
    try {
      manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
    } catch {
      return [];
    }
    if (manifest.private) return [];
    const exportsMap = manifest.publishConfig?.exports ?? manifest.exports ?? { ".": {} };
    const entries = Object.keys(exportsMap).map((key) => (key === "." ? manifest.name : `${manifest.name}/${key.slice(2)}`));
    const optional = manifest.peerDependenciesMeta ?? {};
    const peers = Object.keys(manifest.peerDependencies ?? {}).filter((n) => n.startsWith("@flotilla/") && !optional[n]?.optional);
    return [{ dir, name: manifest.name, peers, entries: entries.filter((e) => !NEEDS_OPTIONAL_PEER.has(e)) }];
  });
}

/** Installs `members` (and what they bring) into a project of their own and runs tsc over their entry points. */
function checkConsumer(kind, members, tarballs) {
  const consumer = join(work, `consumer-${kind}`);
  mkdirSync(join(consumer, "src"), { recursive: true });
  // Our own required peers (the testing kit's) are installed by the user too: pnpm would look for them in the registry.
  const names = [...new Set(members.flatMap((p) => [p.name, ...p.peers]))];
  const dependencies = Object.fromEntries(names.map((name) => [name, tarballs[name]]));
  writeFileSync(
    join(consumer, "package.json"),
    JSON.stringify(
      {
        name: `published-types-${kind}`,
        private: true,
        type: "module",
        dependencies,
        devDependencies: { "@types/node": "^22.15.0" },
        // The tarballs name each other by version (^0.0.0), which the registry does not have: point them at the packs.
        pnpm: { overrides: tarballs },
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(consumer, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        target: "ES2023",
        lib: ["ES2023"],
        module: "NodeNext",
        moduleResolution: "NodeNext",
        types: ["node"],
        strict: true,
        skipLibCheck: false,
        noEmit: true,
      },
      include: ["src"],
    }),
  );
  const entries = members.flatMap((p) => p.entries);
  writeFileSync(join(consumer, "src", "index.ts"), `${entries.map((e, i) => `export * as e${i} from "${e}";`).join("\n")}\n`);
  run("pnpm", ["install", "--prefer-offline", "--no-optional", "--config.auto-install-peers=true", "--config.strict-peer-dependencies=false"], consumer);
  try {
    run(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", "tsconfig.json"], consumer);
    log(`${kind}: ok (${entries.join(", ")})`);
    return true;
  } catch (err) {
    process.stdout.write(`${err.stdout ?? ""}${err.stderr ?? ""}`);
    log(`${kind}: tsc failed`);
    return false;
  }
}

const work = mkdtempSync(join(tmpdir(), "flotilla-published-types-"));
try {
  if (!args.has("--no-build")) {
    log("building (pnpm build)");
    run("pnpm", ["build"], ROOT);
  }
  const packages = publicPackages();
  const packs = join(work, "packs");
  mkdirSync(packs);
  const tarballs = {};
  for (const pkg of packages) {
    const out = run("pnpm", ["pack", "--pack-destination", packs], pkg.dir).trim().split("\n").at(-1);
    tarballs[pkg.name] = `file:${join(packs, basename(out))}`;
  }
  log(`packed ${packages.length} packages`);

  const byName = new Map(packages.map((p) => [p.name, p]));
  const groups = Object.entries(CONSUMERS).map(([kind, names]) => [kind, names.map((n) => byName.get(n)).filter(Boolean)]);
  const grouped = new Set(Object.values(CONSUMERS).flat());
  for (const p of packages) if (!grouped.has(p.name)) groups.push([p.name.replace("@flotilla/", ""), [p]]);
  const failed = [];
  for (const [kind, members] of groups) if (!checkConsumer(kind, members, tarballs)) failed.push(kind);
  if (failed.length) {
    log(
      `FAILED for ${failed.join(", ")}: the published types do not compile with only the required dependencies${args.has("--keep") ? ` (projects kept in ${work})` : ""}`,
    );
    process.exitCode = 1;
  } else log("ok: the published types compile with skipLibCheck: false");
} finally {
  if (!args.has("--keep")) rmSync(work, { recursive: true, force: true });
}
