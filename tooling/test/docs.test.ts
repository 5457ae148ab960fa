// The READMEs' code (and docs/*.md's), run as a reader would run it. Every program a README shows (a block that
// imports something) carries a marker saying how it is checked (tooling/test/docs/blocks.ts): run
// against a Redis of its own (a private redis-server, so the README's defaults — the default prefix,
// queue and URL — are what runs), with a flotilla-worker when the README says one must be running;
// run as a service and stopped with SIGTERM; run with vitest; or not run, with the reason (an API
// key, a Temporal server). Shell blocks name commands that must exist from a fresh clone.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startRedisServer, type TestRedisServer } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { type DocBlock, needsMarker, readBlocks, readmeFiles } from "./docs/blocks.ts";
import { CommandChecker } from "./docs/commands.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const snippets = fileURLToPath(new URL("../.docs-snippets/", import.meta.url));
const preload = fileURLToPath(new URL("./docs/preload.mjs", import.meta.url));
const workerMain = join(root, "apps/worker/src/main.ts");
const vitestBin = join(root, "node_modules/vitest/vitest.mjs");
const snippetsConfig = fileURLToPath(new URL("./docs/snippets.vitest.config.ts", import.meta.url));
const blocks = readBlocks(root);
const where = (b: DocBlock) => `${b.file}:${b.line}`;

/** The environment of a README program: no API key (the offline branch runs), no prefix override. */
function readerEnv(redis: TestRedisServer): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, REDIS_URL: redis.url, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "" };
  delete env.FLOTILLA_PREFIX;
  return env;
}

interface Outcome {
  /** Set when it was still running after 45 s and was killed. */
  timedOut?: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function collect(child: ChildProcess): { outcome: Promise<Outcome>; stdout: () => string; stderr: () => string } {
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr!.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const outcome = new Promise<Outcome>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  return { outcome, stdout: () => stdout, stderr: () => stderr };
}

/** A flotilla-worker with every default (queue "default", prefix "flotilla"), as the README starts one. */
async function startWorker(redis: TestRedisServer): Promise<() => Promise<void>> {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", workerMain], { env: readerEnv(redis), stdio: ["ignore", "pipe", "pipe"] });
  const output = collect(child);
  await new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (output.stdout().includes('"msg":"ready"')) {
        clearInterval(timer);
        resolve();
      }
    }, 20);
    void output.outcome.then((o) => {
      clearInterval(timer);
      reject(new Error(`the worker exited (${o.code}) before ready:\n${o.stdout}${o.stderr}`));
    });
  });
  return async () => {
    child.kill("SIGTERM");
    await output.outcome;
  };
}

/** Runs a README program (or, for `vitest`, a README test file) the way its marker says. */
async function runBlock(block: DocBlock): Promise<Outcome> {
  const marker = block.marker as Exclude<DocBlock["marker"], Error | undefined>;
  const redis = await startRedisServer({ aof: false });
  const cwd = mkdtempSync(join(tmpdir(), "flotilla-docs-"));
  let stopWorker: (() => Promise<void>) | undefined;
  try {
    if (marker.kind === "run" && marker.worker) stopWorker = await startWorker(redis);
    mkdirSync(snippets, { recursive: true });
    const name = `${block.file.replace(/[/.]/g, "_")}-${block.line}${marker.kind === "vitest" ? ".test" : ""}.ts`;
    const file = join(snippets, name);
    writeFileSync(file, block.code);
    const args =
      marker.kind === "vitest"
        ? [vitestBin, "run", "--config", snippetsConfig, name]
        : ["--conditions=@flotilla/source", "--disable-warning=ExperimentalWarning", "--import", preload, file];
    const child = spawn(process.execPath, args, {
      cwd: marker.kind === "vitest" ? snippets : cwd,
      env: readerEnv(redis),
      stdio: ["ignore", "pipe", "pipe", "pipe"],
    });
    const output = collect(child);
    let timedOut = false;
    const limit = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, 45_000);
    if (marker.kind === "run" && marker.service) {
      // Stopped once it has said how it stops: when it adds its SIGTERM handler.
      const serving = new Promise<boolean>((resolve) => {
        (child.stdio[3] as NodeJS.ReadableStream).on("data", () => resolve(true));
        void output.outcome.then(() => resolve(false));
      });
      if (await serving) child.kill("SIGTERM");
    }
    const outcome = await output.outcome;
    clearTimeout(limit);
    return { ...outcome, timedOut };
  } finally {
    await stopWorker?.();
    await redis.stop();
    rmSync(cwd, { recursive: true, force: true });
  }
}

describe("README code blocks", () => {
  it("the docs test reads every README and the pages of docs/, and finds programs to run in the root's, the packages' and the porting guide", () => {
    expect(readmeFiles(root)).toEqual(
      expect.arrayContaining(["README.md", "examples/README.md", "packages/client/README.md", "apps/worker/README.md", "docs/porting.md"]),
    );
    const run = blocks.filter((b) => b.marker && !(b.marker instanceof Error) && b.marker.kind === "run");
    expect(run.map((b) => b.file)).toEqual(expect.arrayContaining(["README.md", "packages/client/README.md", "packages/worker/README.md", "docs/porting.md"]));
  });

  it("every program and every shell block carries a valid marker", () => {
    const problems = blocks.flatMap((b) => {
      if (b.marker instanceof Error) return [`${where(b)}: ${b.marker.message}`];
      if (!b.marker && needsMarker(b)) return [`${where(b)}: a ${b.lang} block that runs needs a <!-- docs-test: … --> marker`];
      return [];
    });
    expect(problems).toEqual([]);
  });

  it("every command a shell block gives exists from a fresh clone", () => {
    const checker = new CommandChecker(root);
    const commands = blocks.filter((b) => b.marker && !(b.marker instanceof Error) && b.marker.kind === "commands");
    expect(commands.length).toBeGreaterThan(0);
    const problems = commands.flatMap((b) =>
      b.code
        .split("\n")
        .flatMap((line) => checker.check(line) ?? [])
        .map((p) => `${where(b)}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  it("every `npm run <script>` the docs mention is a script of the root", () => {
    const checker = new CommandChecker(root);
    const docs = [...readmeFiles(root), "CONTRIBUTING.md", "TESTING.md"];
    const problems = docs.flatMap((file) =>
      [...readFileSync(join(root, file), "utf8").matchAll(/`(npm (?:run [\w:-]+|test))[^`]*`/g)]
        .flatMap((m) => checker.check(m[1]!) ?? [])
        .map((p) => `${file}: ${p}`),
    );
    expect(problems).toEqual([]);
  });

  for (const block of blocks) {
    const marker = block.marker;
    if (!marker || marker instanceof Error || marker.kind === "commands") continue;
    if (marker.kind === "skip") {
      it(`${where(block)} is not run`, (ctx) => ctx.skip(`README block not run: ${marker.reason}`));
      continue;
    }
    const how = marker.kind === "vitest" ? "passes under vitest" : marker.service ? "serves until SIGTERM, then exits 0" : "runs and exits 0";
    it(`${where(block)} ${how}${marker.kind === "run" && marker.worker ? " (a worker running)" : ""}`, async () => {
      const { code, signal, stdout, stderr, timedOut } = await runBlock(block);
      const why = timedOut ? "still running after 45 s (a connection or timer left open keeps a reader's process alive)\n" : "";
      expect({ code, signal }, `${why}${stdout}\n${stderr}`).toEqual({ code: 0, signal: null });
      if (marker.kind === "run") expect(stderr).toBe("");
    }, 90_000);
  }
});
