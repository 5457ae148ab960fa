// What a package's public entry points import statically — type-only imports included, since those
// are exactly what its published .d.ts import — must be installed wherever the package is: a
// dependency, a required peer or a Node built-in, never an optional peer (pg), an optional
// dependency or a dev dependency. The fast half of the check; the whole of it (third-party .d.ts
// included, from the packed tarballs, `skipLibCheck: false`) is the release check
// `npm run check:types` (tooling/scripts/check-published-types.mjs).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
/** Entry points that exist for an optional peer's users and need it. */
const NEEDS_OPTIONAL_PEER = new Set(["@flotilla/testing/vitest"]);
const BUILTINS = new Set(builtinModules);

interface Manifest {
  name: string;
  private?: boolean;
  exports?: Record<string, { "@flotilla/source"?: string }>;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  peerDependenciesMeta?: Record<string, { optional?: boolean }>;
}

/** Static `import … from "x"`, `export … from "x"` and `import "x"`; dynamic `import("x")` is a lazy load, not a declaration. */
const STATIC_IMPORT = /^\s*(?:import|export)\s(?:[^;]*?\sfrom\s+)?["']([^"']+)["']/gm;

function specifiers(file: string): string[] {
  const source = readFileSync(file, "utf8");
  return [...source.matchAll(STATIC_IMPORT)].map((m) => m[1]!);
}

/** The source files an entry point reaches through relative imports. */
function reachable(entry: string): string[] {
  const seen = new Set<string>();
  const queue = [entry];
  while (queue.length) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const spec of specifiers(file)) if (spec.startsWith(".")) queue.push(resolve(dirname(file), spec));
  }
  return [...seen];
}

const packageOf = (spec: string) =>
  spec
    .split("/")
    .slice(0, spec.startsWith("@") ? 2 : 1)
    .join("/");

function publicManifests(): Array<{ dir: string; manifest: Manifest }> {
  const dirs = ["packages", "apps"].flatMap((parent) => readdirSync(join(ROOT, parent)).map((name) => join(ROOT, parent, name)));
  return dirs
    .filter((dir) => existsSync(join(dir, "package.json")))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Manifest }))
    .filter(({ manifest }) => !manifest.private);
}

/** Every bare import reachable from a public entry point that an install without optional and dev dependencies lacks. */
function missingFromInstall(): string[] {
  const problems: string[] = [];
  for (const { dir, manifest } of publicManifests()) {
    const optional = manifest.peerDependenciesMeta ?? {};
    const installed = new Set([
      manifest.name,
      ...Object.keys(manifest.dependencies ?? {}),
      ...Object.keys(manifest.peerDependencies ?? {}).filter((name) => !optional[name]?.optional),
    ]);
    for (const [key, conditions] of Object.entries(manifest.exports ?? {})) {
      const entry = key === "." ? manifest.name : `${manifest.name}/${key.slice(2)}`;
      const source = conditions["@flotilla/source"];
      if (NEEDS_OPTIONAL_PEER.has(entry) || !source) continue;
      for (const file of reachable(join(dir, source))) {
        for (const spec of specifiers(file)) {
          if (spec.startsWith(".") || spec.startsWith("node:") || BUILTINS.has(spec)) continue;
          if (!installed.has(packageOf(spec))) problems.push(`${entry}: ${file.slice(ROOT.length + 1)} imports "${spec}", which its install may lack`);
        }
      }
    }
  }
  return problems;
}

describe("published types", () => {
  it("public entry points import only what every install of their package has", () => {
    expect(publicManifests().length).toBeGreaterThan(10);
    expect(missingFromInstall()).toEqual([]);
  });
});
