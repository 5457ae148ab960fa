// The `flotilla` bin is a committed shim (bin/flotilla.mjs) so that a fresh install can link it
// before the first build. Run from a copy of the package layout: without dist/ it says what to do;
// with it, it runs dist/main.js with the command's arguments.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const shim = fileURLToPath(new URL("../bin/flotilla.mjs", import.meta.url));
const roots: string[] = [];

function packageCopy(withDist: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "flotilla-cli-bin-"));
  roots.push(root);
  mkdirSync(join(root, "bin"));
  copyFileSync(shim, join(root, "bin", "flotilla.mjs"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module" }));
  if (withDist) {
    mkdirSync(join(root, "dist"));
    writeFileSync(join(root, "dist", "main.js"), 'process.stdout.write("main ran with " + JSON.stringify(process.argv.slice(2)));\n');
  }
  return join(root, "bin", "flotilla.mjs");
}

afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe("the flotilla bin", () => {
  it("runs dist/main.js with the command's arguments", () => {
    const r = spawnSync(process.execPath, [packageCopy(true), "tasks", "--json"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('main ran with ["tasks","--json"]');
  });

  it("before a build, exits 1 with one line saying how to build", () => {
    const r = spawnSync(process.execPath, [packageCopy(false), "tasks"], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stdout).toBe("");
    expect(r.stderr).toBe("flotilla is not built yet: run `bash tooling/scripts/flotilla.sh build` (or `pnpm build`) at the repository root first.\n");
  });
});
