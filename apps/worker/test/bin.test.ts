// The `flotilla-worker` bin is a committed shim (bin/flotilla-worker.mjs) so that a fresh install can
// link it before the first build. Run from a copy of the package layout: without dist/ it says what
// to do; with it, it runs dist/main.js with the command's arguments.
import { spawnSync } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

const shim = fileURLToPath(new URL("../bin/flotilla-worker.mjs", import.meta.url));
const roots: string[] = [];

function packageCopy(withDist: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "flotilla-worker-bin-"));
  roots.push(root);
  mkdirSync(join(root, "bin"));
  copyFileSync(shim, join(root, "bin", "flotilla-worker.mjs"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ type: "module" }));
  if (withDist) {
    mkdirSync(join(root, "dist"));
    writeFileSync(join(root, "dist", "main.js"), 'process.stdout.write("main ran with " + JSON.stringify(process.argv.slice(2)));\n');
  }
  return join(root, "bin", "flotilla-worker.mjs");
}

afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe("the flotilla-worker bin", () => {
  it("runs dist/main.js with the command's arguments", () => {
    const r = spawnSync(process.execPath, [packageCopy(true), "--queues", "a,b"], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe('main ran with ["--queues","a,b"]');
  });

  it("before a build, exits 1 saying how to build instead of a module-not-found stack", () => {
    const r = spawnSync(process.execPath, [packageCopy(false)], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe("flotilla-worker is not built yet: run `bash tooling/scripts/flotilla.sh build` (or `pnpm build`) at the repository root first.\n");
  });
});
