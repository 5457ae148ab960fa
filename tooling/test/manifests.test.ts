// What a user gets from the registry, checked from the sources (no build): every package's manifest
// and the LICENSE the tarballs carry. The tarballs themselves (source maps, links, files) are checked
// after a build by tooling/scripts/check-packs.mjs, which CI runs.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const root = fileURLToPath(new URL("../../", import.meta.url));

interface Manifest {
  name: string;
  version?: string;
  private?: boolean;
  license?: string;
  keywords?: string[];
  files?: string[];
  bin?: string | Record<string, string>;
  repository?: string | { url?: string };
  homepage?: string;
  bugs?: string | { url?: string };
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

interface WorkspacePackage {
  dir: string;
  manifest: Manifest;
}

/** The workspace's packages, from pnpm-workspace.yaml's globs (`dir/*` or a folder). */
function workspacePackages(): WorkspacePackage[] {
  const globs: string[] = parse(readFileSync(join(root, "pnpm-workspace.yaml"), "utf8")).packages;
  const dirs = globs.flatMap((glob) => {
    if (!glob.endsWith("/*")) return [glob];
    const parent = glob.slice(0, -2);
    return readdirSync(join(root, parent), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => `${parent}/${e.name}`);
  });
  return dirs
    .filter((dir) => existsSync(join(root, dir, "package.json")))
    .map((dir) => ({ dir, manifest: JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8")) }));
}

const packages = workspacePackages();
const publishable = packages.filter((p) => !p.manifest.private);
const privateNames = new Set(packages.filter((p) => p.manifest.private).map((p) => p.manifest.name));
/** `pnpm -r pack` packs every workspace package with a name and a version, private or not. */
const packedByPnpm = packages.filter((p) => p.manifest.name && p.manifest.version);
/** A URL that stands for nothing: a reserved example domain or TLD, or a placeholder word. */
const placeholder = /example\.(com|org|net|invalid)|\.invalid\b|\.example\b|\blocalhost\b|TODO|CHANGEME|your-org|<[^>]+>/i;

function urlOf(field: string | { url?: string } | undefined): string | undefined {
  return typeof field === "string" ? field : field?.url;
}

/** Markdown link targets: `[text](target)` and `[ref]: target`. */
function linkTargets(markdown: string): string[] {
  const inline = [...markdown.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
  const refs = [...markdown.matchAll(/^\s*\[[^\]]+\]:\s*<?(\S+?)>?\s*$/gm)].map((m) => m[1]!);
  return [...inline, ...refs];
}

describe("package manifests", () => {
  it("the workspace has the packages this test expects to look at", () => {
    expect(publishable.map((p) => p.manifest.name)).toEqual(expect.arrayContaining(["@flotilla/core", "@flotilla/client", "@flotilla/worker-app"]));
    expect(privateNames).toEqual(new Set(["@flotilla/tooling", "@flotilla/examples", "@flotilla/demo", "@flotilla/bench", "@flotilla/dashboard"]));
  });

  it("ship a LICENSE: MIT, Flotilla contributors, 2026 (pnpm adds the root's to every tarball)", () => {
    const license = readFileSync(join(root, "LICENSE"), "utf8");
    expect(license.split("\n")[0]).toBe("MIT License");
    expect(license).toContain("Copyright (c) 2026 Flotilla contributors");
    expect(license).toContain('THE SOFTWARE IS PROVIDED "AS IS"');
    for (const { dir, manifest } of publishable) expect(manifest.license, dir).toBe("MIT");
  });

  it("every package names the files it ships", () => {
    for (const { dir, manifest } of packages) {
      expect(Array.isArray(manifest.files) && manifest.files.length > 0, `${dir} has no files list`).toBe(true);
    }
  });

  it("no package `pnpm -r pack` packs holds the downloaded toolchain", () => {
    const toolchain = /^TOOLCHAIN="\$ROOT\/([^"]+)"$/m.exec(readFileSync(join(root, "tooling/scripts/flotilla.sh"), "utf8"))?.[1];
    expect(toolchain).toBeDefined();
    for (const { dir, manifest } of packedByPnpm) {
      const inside = relative(join(root, dir), join(root, toolchain!));
      if (inside.startsWith("..")) continue;
      // Inside this package's folder: its files list must leave it out.
      const top = inside.split(sep)[0]!;
      expect(manifest.files, `${dir} would pack ${toolchain}`).not.toContain(top);
      expect(manifest.files, `${dir} would pack ${toolchain}`).not.toContain(".");
    }
    // The private tooling package, which holds it, is never packed at all: it has no version.
    const tooling = packages.find((p) => p.manifest.name === "@flotilla/tooling")!;
    expect(tooling.manifest.version).toBeUndefined();
  });

  it("published manifests: no placeholder URL, keywords, and no private workspace package among any dependencies", () => {
    for (const { dir, manifest } of publishable) {
      for (const field of ["repository", "homepage", "bugs"] as const) {
        const url = urlOf(manifest[field]);
        if (url !== undefined) expect(url, `${dir} ${field}`).not.toMatch(placeholder);
      }
      expect(manifest.keywords?.length ?? 0, `${dir} keywords`).toBeGreaterThanOrEqual(3);
      for (const kind of ["dependencies", "devDependencies", "peerDependencies", "optionalDependencies"] as const) {
        const named = Object.keys(manifest[kind] ?? {}).filter((name) => privateNames.has(name));
        expect(named, `${dir} ${kind}`).toEqual([]);
      }
    }
  });

  // Only in a git checkout: the mutation tool's copies of the tree have no .git to ask.
  it.skipIf(!existsSync(join(root, ".git")))("every bin is a file committed to git, so a fresh install links it before any build", () => {
    const tracked = new Set(execFileSync("git", ["ls-files"], { cwd: root, encoding: "utf8" }).split("\n"));
    let bins = 0;
    for (const { dir, manifest } of packages) {
      const targets = typeof manifest.bin === "string" ? [manifest.bin] : Object.values(manifest.bin ?? {});
      for (const target of targets) {
        bins++;
        expect(tracked.has(normalize(join(dir, target))), `${dir} bin ${target}`).toBe(true);
      }
    }
    expect(bins).toBeGreaterThan(0);
  });

  it("README links in published packages work on the registry: absolute, or to a file the package ships", () => {
    for (const { dir, manifest } of publishable) {
      const readme = join(root, dir, "README.md");
      expect(existsSync(readme), `${dir} README.md`).toBe(true);
      for (const target of linkTargets(readFileSync(readme, "utf8"))) {
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const path = relative(join(root, dir), join(dirname(readme), target.split("#")[0]!));
        const shipped = !path.startsWith("..") && (manifest.files ?? []).some((f) => path === f || path.startsWith(`${f}/`));
        expect(shipped, `${dir}/README.md links to ${target}, which is not in the package`).toBe(true);
      }
    }
  });
});
