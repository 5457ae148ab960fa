// The long phases of a fresh clone say what they are doing: the workspace build prints a line per
// package (tooling/scripts/build.sh, behind `npm run demo`, `npm run build`, `npm run worker`), and
// the Temporal dev server's build (tooling/scripts/temporal.sh, behind `npm test`) names each step,
// how long it usually takes, and says it is still going while a step runs.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { type CapturedRun, spawnCaptured } from "./spawn-captured.ts";

const scripts = fileURLToPath(new URL("../scripts/", import.meta.url));
const root = fileURLToPath(new URL("../../", import.meta.url));
const temporalVersion = /^VERSION="([^"]+)"/m.exec(readFileSync(join(scripts, "temporal.sh"), "utf8"))![1]!;
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

const run = (script: string, args: string[], env: NodeJS.ProcessEnv): CapturedRun =>
  spawnCaptured("bash", [join(scripts, script), ...args], { cwd: root, env });

describe("tooling/scripts/temporal.sh progress", () => {
  it("names each step and the usual duration, and says it is still compiling while the compile runs", async () => {
    const box = mkdtempSync(join(tmpdir(), "flotilla-temporal-progress-"));
    dirs.push(box);
    const bin = join(box, "bin");
    mkdirSync(bin);
    mkdirSync(join(box, "module"));
    // A stand-in `go` whose compile lasts until the test lets it finish.
    writeFileSync(
      join(bin, "go"),
      `#!/usr/bin/env bash
case "$1" in
  mod) printf '{\\n\\t"Dir": "%s",\\n}\\n' "$FAKE_MODULE_DIR" ;;
  build)
    while [ ! -e "$FAKE_GO_RELEASE" ]; do sleep 0.05; done
    printf 'binary\\n' > "$3"; chmod +x "$3" ;;
  *) exit 2 ;;
esac
`,
    );
    chmodSync(join(bin, "go"), 0o755);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      FLOTILLA_CACHE: join(box, "cache"),
      FAKE_MODULE_DIR: join(box, "module"),
      FAKE_GO_RELEASE: join(box, "release"),
      FLOTILLA_PROGRESS_SECONDS: "0.2",
    };
    delete env.FLOTILLA_TEMPORAL_BIN;
    const build = run("temporal.sh", [], env);
    try {
      await waitFor(() => /still compiling… \(\d+m\d\ds so far\)/.test(build.stderr()), { timeoutMs: 30_000, what: 'a "still compiling" line' });
    } finally {
      writeFileSync(join(box, "release"), "");
    }
    expect(await build.done, build.stderr()).toBe(0);
    const binary = join(box, "cache", "temporal", temporalVersion, "temporal");
    expect(build.stdout().trim()).toBe(binary);
    const lines = build.stderr().split("\n");
    const at = (pattern: RegExp) => lines.findIndex((l) => pattern.test(l));
    expect(at(new RegExp(`building the Temporal dev server \\(the temporal CLI ${temporalVersion}\\).*once`))).toBe(0);
    expect(at(/usually takes \d+–\d+ minutes/)).toBe(1);
    expect(at(/1\/2 downloading github\.com\/temporalio\/cli@/)).toBeGreaterThan(1);
    expect(at(/2\/2 compiling/)).toBeGreaterThan(at(/1\/2 downloading/));
    expect(at(/still compiling/)).toBeGreaterThan(at(/2\/2 compiling/));
    expect(lines.filter(Boolean).at(-1)).toMatch(new RegExp(`built in \\d+m\\d\\ds: ${binary}$`));
    // The ticker stopped with the step: nothing was written after the last line.
    const before = build.stderr();
    await new Promise((r) => setTimeout(r, 500));
    expect(build.stderr()).toBe(before);
  }, 60_000);
});

describe("tooling/scripts/build.sh", () => {
  it("prints a line per package it builds, and no pnpm banners", async () => {
    const build = run("build.sh", ["--filter=@flotilla/core"], { ...process.env, TURBO_TELEMETRY_DISABLED: "1" });
    expect(await build.done, build.stderr()).toBe(0);
    const out = build.stderr();
    expect(out).toMatch(/^\S*\[flotilla\]\S* building the workspace with turbo, a line per package \(usually under a minute/);
    expect(out).toMatch(/^@flotilla\/core:build: cache (hit|miss|bypass)/m);
    expect(out).not.toMatch(/^@flotilla\/core:build: > /m);
    expect(out).not.toMatch(/^@flotilla\/core:build: *$/m);
    expect(out).toMatch(/Tasks: +\d+ successful/);
  }, 120_000);
});
