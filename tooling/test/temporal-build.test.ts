// tooling/scripts/temporal.sh builds the Temporal dev server once into a cache shared by every clone
// on the machine, so two test runs (two clones' CI) may build it at the same moment. A stand-in `go`
// on the PATH writes its output in two halves a moment apart, as a real build writes a large binary,
// so two runs that shared an output file would leave a mixed or truncated binary in the cache.
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { waitFor } from "@flotilla/testing";
import { afterAll, describe, expect, it } from "vitest";
import { spawnCaptured } from "./spawn-captured.ts";

const script = fileURLToPath(new URL("../scripts/temporal.sh", import.meta.url));
const version = /^VERSION="([^"]+)"/m.exec(readFileSync(script, "utf8"))![1]!;
const roots: string[] = [];

const fakeGo = `#!/usr/bin/env bash
echo "$*" >> "$FAKE_GO_LOG"
case "$1" in
  mod) printf '{\\n\\t"Path": "github.com/temporalio/cli",\\n\\t"Dir": "%s",\\n}\\n' "$FAKE_MODULE_DIR" ;;
  build)
    out="$3"
    printf 'first half %s\\n' "$$" >> "$out"
    sleep 1
    if [ -n "\${FAKE_GO_FAIL:-}" ]; then echo "fake go: build failed" >&2; exit 1; fi
    printf 'second half %s\\n' "$$" >> "$out"
    chmod +x "$out" ;;
  *) echo "fake go: unexpected $*" >&2; exit 2 ;;
esac
`;

/** A cache folder and a PATH whose `go` is the stand-in; FLOTILLA_TEMPORAL_BIN unset. */
function sandbox(extra: Record<string, string> = {}) {
  const root = mkdtempSync(join(tmpdir(), "flotilla-temporal-build-"));
  roots.push(root);
  const bin = join(root, "bin");
  const moduleDir = join(root, "module");
  mkdirSync(bin);
  mkdirSync(moduleDir);
  writeFileSync(join(bin, "go"), fakeGo);
  chmodSync(join(bin, "go"), 0o755);
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH}`,
    FLOTILLA_CACHE: join(root, "cache"),
    FAKE_MODULE_DIR: moduleDir,
    FAKE_GO_LOG: join(root, "go.log"),
    ...extra,
  };
  delete env.FLOTILLA_TEMPORAL_BIN;
  const cacheDir = join(root, "cache", "temporal", version);
  return { env, cacheDir, binary: join(cacheDir, "temporal"), goCalls: () => readLines(join(root, "go.log")) };
}

function readLines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

async function run(env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnCaptured("bash", [script], { env });
  const code = await child.done;
  return { code, stdout: child.stdout(), stderr: child.stderr() };
}

afterAll(() => {
  for (const root of roots) rmSync(root, { recursive: true, force: true });
});

describe("tooling/scripts/temporal.sh", () => {
  it("two runs at once build once: the second waits for the first and takes its binary; the cache holds one whole binary", async () => {
    const box = sandbox();
    const [a, b] = await Promise.all([run(box.env), run(box.env)]);
    expect(a.code, a.stderr).toBe(0);
    expect(b.code, b.stderr).toBe(0);
    expect(a.stdout.trim()).toBe(box.binary);
    expect(b.stdout.trim()).toBe(box.binary);
    // One build ran; the other run said it waited for it.
    expect(box.goCalls().filter((c) => c.startsWith("build "))).toHaveLength(1);
    expect(a.stderr + b.stderr).toContain("another run is building the Temporal dev server; waiting for it");
    const halves = readFileSync(box.binary, "utf8").split("\n").filter(Boolean);
    expect(halves).toHaveLength(2);
    expect(halves[0]).toMatch(/^first half (\d+)$/);
    expect(halves[1]).toBe(halves[0]!.replace("first", "second"));
    // Nothing half-built is left beside it.
    expect(readdirSync(box.cacheDir)).toEqual(["temporal"]);
  }, 60_000);

  it("a run that waited for a build that failed builds itself", async () => {
    const box = sandbox();
    const failing = run({ ...box.env, FAKE_GO_FAIL: "1" });
    await waitFor(() => box.goCalls().some((c) => c.startsWith("build ")), { what: "the first build to start" });
    const second = await run(box.env);
    expect((await failing).code).not.toBe(0);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe(box.binary);
    expect(box.goCalls().filter((c) => c.startsWith("build "))).toHaveLength(2);
  }, 60_000);

  it("a failed build leaves nothing in the cache, so the next run builds again", async () => {
    const box = sandbox({ FAKE_GO_FAIL: "1" });
    const r = await run(box.env);
    expect(r.code).not.toBe(0);
    expect(r.stdout).toBe("");
    expect(readdirSync(box.cacheDir)).toEqual([]);
  }, 60_000);

  it("a cached binary is printed without building", async () => {
    const box = sandbox();
    expect((await run(box.env)).code).toBe(0);
    const calls = box.goCalls().length;
    const again = await run(box.env);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout.trim()).toBe(box.binary);
    expect(box.goCalls()).toHaveLength(calls);
  }, 60_000);
});
