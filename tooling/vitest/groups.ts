// How the suite is split into groups that run one after another, and which files run on the cluster
// pass. Every test file belongs to its package's project (one per workspace package, as its own
// vitest.config.ts defines it); the root config (vitest.config.ts) asks this module for the projects
// of a run:
//   group 0  every package's files but the serial ones, `workers` files at a time: most of the suite
//            waits on Redis and timers, not on the CPU, so several files share the two cores;
//   group 1  the Temporal project's files, half as many at a time (each starts a dev server), after the
//            rest: on a new machine the Temporal dev server is still being built while group 0 runs
//            (tooling/scripts/flotilla.sh);
//   group 2  the `serial` project: the files marked `// @serial: <why>` (kill storms, failovers,
//            processes whose timing a test bounds), one at a time, on a machine nothing else loads.
// A test file says what it needs in its leading comment block (before its first import):
//   // @serial: <why it must run alone>
//   // @cluster: <why it must also run on a Redis Cluster>
//   // @single: <why it need not, though it kills or follows live events on the suite's Redis>
// The cluster pass (FLOTILLA_TEST_REDIS=cluster) runs only the files marked `@cluster`; the rule that
// decides which those are is TESTING.md's "Which files run on the cluster", and
// tooling/test/test-groups.test.ts checks it.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join, relative } from "node:path";
import type { TestProjectInlineConfiguration } from "vitest/config";
import { flotillaProject } from "./preset.ts";

export type TestPass = "single" | "cluster";

export interface TestFile {
  /** Relative to the repository root, with `/`. */
  path: string;
  /** The project (package) it belongs to: the name its vitest.config.ts gives. */
  project: string;
  /** The project's folder, relative to the repository root. */
  projectDir: string;
  /** Why it runs alone, when it does (`// @serial: …`). */
  serial?: string;
  /** Why it also runs on a Redis Cluster, when it does (`// @cluster: …`). */
  cluster?: string;
  /** Why it runs on one Redis only although the cluster rule's signals point at it (`// @single: …`). */
  single?: string;
}

export type Markers = Pick<TestFile, "serial" | "cluster" | "single">;
type MarkerKind = keyof Markers;

/** The group order of each kind of file: vitest runs groups one after another, lowest first. */
export const GROUP_ORDER = { parallel: 0, temporal: 1, serial: 2 } as const;

/** The project that holds every `@serial` file of every package. */
export const SERIAL_PROJECT = "serial";

/** The projects whose files run after the rest (their binary may still be building). */
const LATE_PROJECTS = new Set(["temporal"]);

/** How many of the late projects' files run at once: half the parallel groups' count, at least one. */
export const lateWorkers = (workers: number): number => Math.max(1, Math.floor(workers / 2));

const MARKER = /^\/\/ @(serial|cluster|single):(.*)$/;
const TEST_FILE = /\.test\.ts$/;

/**
 * The markers of a test file's leading comment block (the lines before its first line of code):
 * `// @serial: why`, `// @cluster: why`, `// @single: why`. A marker without a reason, one after the
 * first line of code, or both `@cluster` and `@single`, is an error: a reason is what keeps the
 * groups honest.
 */
export function readMarkers(text: string, path = "<file>"): Markers {
  const found: Markers = {};
  let header = true;
  for (const [i, line] of text.split("\n").entries()) {
    const trimmed = line.trim();
    if (header && trimmed !== "" && !trimmed.startsWith("//")) header = false;
    const m = MARKER.exec(trimmed);
    if (!m) {
      if (/^\/\/\s*@(serial|cluster|single)\b/.test(trimmed))
        throw new Error(`${path}:${i + 1}: write the marker as "// @${trimmed.replace(/^\/\/\s*@/, "").split(/\W/)[0]}: <why>"`);
      continue;
    }
    const [, kind, why] = m as unknown as [string, MarkerKind, string];
    if (!header) throw new Error(`${path}:${i + 1}: "// @${kind}:" belongs in the file's leading comment block, before its first import`);
    if (why.trim() === "") throw new Error(`${path}:${i + 1}: "// @${kind}:" needs a reason after the colon`);
    found[kind] = why.trim();
  }
  if (found.cluster !== undefined && found.single !== undefined) throw new Error(`${path}: "// @cluster:" and "// @single:" contradict each other`);
  return found;
}

/** The folders that hold a vitest project: packages/*, apps/*, examples and tooling (each with a vitest.config.ts). */
export function projectDirs(root: string): string[] {
  const dirs: string[] = [];
  for (const parent of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, parent)).sort()) dirs.push(`${parent}/${name}`);
  }
  dirs.push("examples", "tooling");
  return dirs.filter((d) => existsSync(join(root, d, "vitest.config.ts")));
}

/** A project's name, as its vitest.config.ts gives it to `flotillaProject("<name>")`. */
export function projectName(root: string, dir: string): string {
  const text = readFileSync(join(root, dir, "vitest.config.ts"), "utf8");
  const m = /flotillaProject\("([^"]+)"\)/.exec(text);
  if (!m) throw new Error(`${dir}/vitest.config.ts: no flotillaProject("<name>") to take the project's name from`);
  return m[1]!;
}

function walk(dir: string, out: string[], pattern: RegExp = TEST_FILE): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === "node_modules" || entry.name === "fixtures") continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) walk(path, out, pattern);
    else if (pattern.test(entry.name)) out.push(path);
  }
}

function hasTypeTests(dir: string): boolean {
  const found: string[] = [];
  walk(join(dir, "test"), found, /\.test-d\.ts$/);
  return found.length > 0;
}

/** Every test file of the workspace (a project's `src/**` and `test/**` `*.test.ts`), with its markers. */
export function testFiles(root: string): TestFile[] {
  const files: TestFile[] = [];
  for (const projectDir of projectDirs(root)) {
    const project = projectName(root, projectDir);
    const paths: string[] = [];
    for (const sub of ["src", "test"]) walk(join(root, projectDir, sub), paths);
    for (const abs of paths.sort()) {
      const path = relative(root, abs).split("\\").join("/");
      files.push({ path, project, projectDir, ...readMarkers(readFileSync(abs, "utf8"), path) });
    }
  }
  return files;
}

/** How many test files run at once in the parallel groups: FLOTILLA_TEST_WORKERS, else twice the cores (at least 2). */
export function parallelWorkers(env: NodeJS.ProcessEnv = process.env): number {
  const given = env.FLOTILLA_TEST_WORKERS;
  if (given !== undefined && given !== "") {
    const n = Number(given);
    if (!Number.isInteger(n) || n < 1) throw new Error(`FLOTILLA_TEST_WORKERS must be a whole number ≥ 1, not "${given}"`);
    return n;
  }
  return Math.max(2, 2 * availableParallelism());
}

/** Which pass this run is: FLOTILLA_TEST_REDIS=cluster is the cluster pass, anything else (unset, "single") the single one. */
export function testPass(env: NodeJS.ProcessEnv = process.env): TestPass {
  return env.FLOTILLA_TEST_REDIS === "cluster" ? "cluster" : "single";
}

/** The files a pass runs: every file on one Redis; on the cluster, the `@cluster` ones. */
export function filesOfPass(files: readonly TestFile[], pass: TestPass): TestFile[] {
  return pass === "cluster" ? files.filter((f) => f.cluster !== undefined) : [...files];
}

/**
 * The projects of a run: each package's files of the pass but the serial ones (group 0, or 1 for the
 * late projects), then one `serial` project with the serial files of every package (group 2, one
 * file at a time). A project left with no file is left out.
 */
export function testProjects(root: string, pass: TestPass, workers: number): TestProjectInlineConfiguration[] {
  const all = testFiles(root);
  const chosen = new Set(filesOfPass(all, pass).map((f) => f.path));
  const projects: TestProjectInlineConfiguration[] = [];
  for (const dir of projectDirs(root)) {
    const mine = all.filter((f) => f.projectDir === dir);
    const runs = mine.filter((f) => chosen.has(f.path) && f.serial === undefined);
    // Type-level tests (`*.test-d.ts`, run through tsc) need no Redis: they run in the single pass only.
    const typeTests = pass === "single" && hasTypeTests(join(root, dir));
    if (runs.length === 0 && !typeTests) continue;
    const name = mine[0]?.project ?? projectName(root, dir);
    const left = mine.filter((f) => !runs.includes(f)).map((f) => relative(dir, f.path).split("\\").join("/"));
    projects.push({
      extends: join(root, dir, "vitest.config.ts"),
      root: join(root, dir),
      test: {
        name,
        exclude: ["**/node_modules/**", ...left],
        ...(typeTests ? {} : { typecheck: { enabled: false } }),
        sequence: { groupOrder: LATE_PROJECTS.has(name) ? GROUP_ORDER.temporal : GROUP_ORDER.parallel },
        // Each Temporal file starts a dev server of its own (a Go process that takes a core to start):
        // half as many at once.
        maxWorkers: LATE_PROJECTS.has(name) ? lateWorkers(workers) : workers,
      },
    });
  }
  const serial = all.filter((f) => chosen.has(f.path) && f.serial !== undefined).map((f) => f.path);
  if (serial.length > 0) {
    const base = flotillaProject(SERIAL_PROJECT);
    projects.push({
      ...base,
      extends: false,
      root,
      test: { ...base.test, include: serial, sequence: { groupOrder: GROUP_ORDER.serial }, maxWorkers: 1 },
    });
  }
  return projects;
}
