// The suite's groups and the cluster pass, checked against the repository's test files: each file runs
// once per pass, the serial files alone after the rest, and the files the cluster rule (TESTING.md,
// "Which files run on the cluster") points at are on the cluster pass or say why not.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  filesOfPass,
  GROUP_ORDER,
  lateWorkers,
  parallelWorkers,
  readMarkers,
  SERIAL_PROJECT,
  type TestFile,
  testFiles,
  testPass,
  testProjects,
} from "../vitest/groups.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const files = testFiles(root);
const source = (f: TestFile) => readFileSync(join(root, f.path), "utf8");
/** A file's source with the local helpers it imports (`./helpers.ts`), where a suite's Redis is often reached. */
function withHelpers(f: TestFile): string {
  const text = source(f);
  const helpers = [...text.matchAll(/^import .* from "(\.\/[^"]+\.ts)";$/gm)]
    .map((m) => join(root, dirname(f.path), m[1]!))
    .filter((path) => existsSync(path))
    .map((path) => readFileSync(path, "utf8"));
  return [text, ...helpers].join("\n");
}

/** Uses the suite's Redis (or cluster): the helpers that hand it out. A file on private servers only does not. */
const SUITE_REDIS = /\b(useFlotilla|createTestEnv|testConnection|testRedis|testRedisEnv|redisFromEnv|redisUrl)\(/;
/** Kills, pauses or fails over a process or a connection: what a cluster changes (MOVED, failovers, reconnects to a slot's node). */
const KILLS = /SIGKILL|SIGSTOP|"KILL"|CLIENT KILL|"PAUSE"|CLIENT PAUSE|\.failover\(|failover\(/g;
/** Follows live events (sharded Pub/Sub underneath): streams, the watch feed, status feeds, SSE. */
const LIVE = /\.stream\(|\.watch\(|streamEvents|StatusFeed|text\/event-stream|\/events\b|\.subscribe\(|ssubscribe/g;
/** A file whose subject is following live events names them this often, not once in passing. */
const LIVE_SUBJECT = 3;

/** Every `.ts` file under `dir` but tests. */
function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") && !entry.name.startsWith("__planted__")) {
      out.push(join(entry.parentPath, entry.name));
    }
  }
  return out;
}

/** What each project of a pass runs: the files of its folder its excludes leave, or a serial project's includes. */
function projectFiles(pass: "single" | "cluster"): Map<string, { files: string[]; groupOrder: number; maxWorkers: number }> {
  const out = new Map<string, { files: string[]; groupOrder: number; maxWorkers: number }>();
  for (const p of testProjects(root, pass, 3)) {
    const test = p.test!;
    const name = test.name as string;
    const chosen =
      name === SERIAL_PROJECT
        ? (test.include as string[])
        : files
            .filter((f) => join(root, f.projectDir) === p.root)
            .filter((f) => !(test.exclude as string[]).includes(f.path.slice(f.projectDir.length + 1)))
            .map((f) => f.path);
    out.set(name, { files: chosen, groupOrder: test.sequence!.groupOrder!, maxWorkers: test.maxWorkers as number });
  }
  return out;
}

describe("test file markers", () => {
  it("are read from the leading comment block, each with a reason", () => {
    expect(readMarkers("// What this tests.\n// @serial: a kill storm\n// @cluster: failovers\nimport x from 'y';\n")).toEqual({
      serial: "a kill storm",
      cluster: "failovers",
    });
    expect(readMarkers("// @single: only one connection's behaviour\n\ndescribe('x', () => {});\n")).toEqual({ single: "only one connection's behaviour" });
    expect(() => readMarkers("import x from 'y';\n// @serial: too late\n", "a.test.ts")).toThrow(/a\.test\.ts:2: .* leading comment block/);
    expect(() => readMarkers("// @cluster:\n", "b.test.ts")).toThrow(/b\.test\.ts:1: .* needs a reason/);
    expect(() => readMarkers("// @cluster because\n", "c.test.ts")).toThrow(/write the marker as "\/\/ @cluster: <why>"/);
    expect(() => readMarkers("// @cluster: x\n// @single: y\n", "d.test.ts")).toThrow(/contradict/);
  });

  it("of every test file in the repository parse", () => {
    expect(files.length).toBeGreaterThan(150);
    expect(new Set(files.map((f) => f.path)).size).toBe(files.length);
  });
});

describe("the groups", () => {
  it("run every file once on one Redis: the serial ones in the serial project, alone and last; Temporal's after the rest", () => {
    const projects = projectFiles("single");
    const all = [...projects.values()].flatMap((p) => p.files).sort();
    expect(all).toEqual(files.map((f) => f.path).sort());
    const serial = projects.get(SERIAL_PROJECT)!;
    expect(serial.files.sort()).toEqual(
      files
        .filter((f) => f.serial !== undefined)
        .map((f) => f.path)
        .sort(),
    );
    expect(serial).toMatchObject({ groupOrder: GROUP_ORDER.serial, maxWorkers: 1 });
    expect(projects.get("temporal")).toMatchObject({ groupOrder: GROUP_ORDER.temporal, maxWorkers: lateWorkers(3) });
    expect(lateWorkers(4)).toBe(2);
    expect(lateWorkers(1)).toBe(1);
    expect(projects.get("worker")).toMatchObject({ groupOrder: GROUP_ORDER.parallel, maxWorkers: 3 });
    expect(GROUP_ORDER.parallel).toBeLessThan(GROUP_ORDER.temporal);
    expect(GROUP_ORDER.temporal).toBeLessThan(GROUP_ORDER.serial);
  });

  it("run on the cluster pass exactly the @cluster files, each once", () => {
    const all = [...projectFiles("cluster").values()].flatMap((p) => p.files).sort();
    expect(all).toEqual(
      files
        .filter((f) => f.cluster !== undefined)
        .map((f) => f.path)
        .sort(),
    );
    expect(filesOfPass(files, "cluster").length).toBe(all.length);
  });

  it("take the pass and the number of files at once from the environment", () => {
    expect(testPass({})).toBe("single");
    expect(testPass({ FLOTILLA_TEST_REDIS: "cluster" })).toBe("cluster");
    expect(parallelWorkers({ FLOTILLA_TEST_WORKERS: "5" })).toBe(5);
    expect(parallelWorkers({})).toBeGreaterThanOrEqual(2);
    expect(() => parallelWorkers({ FLOTILLA_TEST_WORKERS: "0" })).toThrow(/FLOTILLA_TEST_WORKERS/);
    expect(() => parallelWorkers({ FLOTILLA_TEST_WORKERS: "two" })).toThrow(/FLOTILLA_TEST_WORKERS/);
  });
});

describe("the cluster rule", () => {
  it("puts on the cluster only files that use the suite's Redis (a file on servers of its own runs the same in both passes)", () => {
    const idle = files.filter((f) => f.cluster !== undefined && !SUITE_REDIS.test(withHelpers(f))).map((f) => f.path);
    expect(idle).toEqual([]);
  });

  it("puts on the cluster every file that kills, pauses or fails over on the suite's Redis, or says why not", () => {
    const undecided = files
      .filter((f) => f.cluster === undefined && f.single === undefined)
      .filter((f) => {
        const text = source(f);
        return SUITE_REDIS.test(withHelpers(f)) && (text.match(KILLS)?.length ?? 0) > 0;
      })
      .map((f) => f.path);
    expect(undecided, "add `// @cluster: <why>` or `// @single: <why not>` to each").toEqual([]);
  });

  it("puts on the cluster every file whose subject is following live events on the suite's Redis, or says why not", () => {
    const undecided = files
      .filter((f) => f.cluster === undefined && f.single === undefined)
      .filter((f) => {
        const text = source(f);
        return SUITE_REDIS.test(withHelpers(f)) && (text.match(LIVE)?.length ?? 0) >= LIVE_SUBJECT;
      })
      .map((f) => f.path);
    expect(undecided, "add `// @cluster: <why>` or `// @single: <why not>` to each").toEqual([]);
  });

  it("has every package that talks to Redis in its source tested on a cluster: by a @cluster file of its own or one that imports it, or a cluster a test of its own starts", () => {
    const TALKS = /from "ioredis"|@flotilla\/core\/redis|\.evalsha\(|redis\.(x|h|z|s)[a-z]+\(/;
    // Not on a cluster yet, and why (TESTING.md says the same).
    const exempt: Record<string, string> = {
      "@flotilla/bench": "its fleet scenario starts a cluster of its own; the bench's test checks the command",
      "@flotilla/demo": "the demo's own admin connection is a plain one",
      "@flotilla/temporal": "Temporal mode's tests need the dev server; its Redis half is the worker's",
      "@flotilla/examples": "the examples run on one Redis as a newcomer runs them; what they use runs on the cluster in its package",
    };
    const packages = new Map<string, { dir: string; name: string }>();
    for (const f of files) {
      const name = JSON.parse(readFileSync(join(root, f.projectDir, "package.json"), "utf8")).name as string;
      packages.set(f.projectDir, { dir: f.projectDir, name });
    }
    const onCluster = files.filter((f) => f.cluster !== undefined);
    const missing: string[] = [];
    for (const { dir, name } of packages.values()) {
      if (exempt[name] || !existsSync(join(root, dir, "src"))) continue;
      const sources = sourceFiles(join(root, dir, "src"));
      // A file may vanish while this reads (boundaries.test.ts plants and removes files in src/ beside it).
      const text = (path: string) => (existsSync(path) ? readFileSync(path, "utf8") : "");
      if (!sources.some((path) => TALKS.test(text(path)))) continue;
      const covered =
        onCluster.some((f) => f.projectDir === dir || source(f).includes(`"${name}"`) || source(f).includes(`"${name}/`)) ||
        files.some((f) => f.projectDir === dir && source(f).includes("startRedisCluster("));
      if (!covered) missing.push(name);
    }
    expect(missing).toEqual([]);
  });
});
