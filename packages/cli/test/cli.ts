// The `flotilla` command on the test Redis, under a test's prefix. In this process by default, through
// `run(argv, io)` (what src/main.ts wraps): a command costs no Node start. As a real process, with
// `{ process: true }`, where the process boundary is what a test is about (the exit code the shell
// sees, output flushed before exit, exiting by itself, Ctrl-C, EPIPE): the TypeScript source run by
// Node (--conditions picks the workspace packages' sources).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { run } from "@flotilla/cli";
import { testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll } from "vitest";
import { likeAProcess } from "./in-process.ts";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

export interface Exit {
  /** The exit code; null when it was killed (a process) or given up on (in process) at `timeoutMs`. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Added to (or overriding) the environment: the test Redis and FLOTILLA_PREFIX=prefix. */
  env?: Record<string, string | undefined>;
  /** Ended after this long, so a hung command fails its test rather than the run: a process is killed (SIGKILL). @default 30_000 */
  timeoutMs?: number;
  /** A real `flotilla` process rather than `run()` in this one. @default false */
  process?: boolean;
}

/** A running `flotilla`: what it wrote so far, and its exit. */
export interface Running {
  stdout(): string;
  stderr(): string;
  /** Resolves once what it wrote (stdout, or stderr with `on: "stderr"`) passes `check`. */
  output(check: (text: string) => boolean, options?: { on?: "stdout" | "stderr"; timeoutMs?: number }): Promise<string>;
  /** Ctrl-C: SIGINT to a process, the abort signal `run()` is given in process. */
  interrupt(): void;
  /** Whether it has ended. */
  ended(): boolean;
  /** The process, with `process: true`. */
  child?: ChildProcess;
  /**
   * Its end. In process it rejects when the run left something open or changed the process's state
   * (see in-process.ts): what a process would have taken with it when it exited.
   */
  exited: Promise<Exit>;
}

/** What both kinds of run share: the text written so far, and waiting for some. */
function running(args: readonly string[], parts: Omit<Running, "output">): Running {
  return {
    ...parts,
    output: (check, { on = "stdout", timeoutMs = 20_000 } = {}) =>
      waitFor(
        () => {
          const text = on === "stdout" ? parts.stdout() : parts.stderr();
          if (check(text)) return text;
          if (parts.ended()) throw new Error(`flotilla ${args.join(" ")} ended first:\n${parts.stdout()}\n${parts.stderr()}`);
          return undefined;
        },
        { timeoutMs, what: `flotilla ${args.join(" ")} to write what the test waits for` },
      ),
  };
}

/** Starts `flotilla <args>` on the test Redis under `prefix`: in this process, or with `process: true` as a process. */
export function start(prefix: string, args: readonly string[], options: CliOptions = {}): Running {
  const env: Record<string, string | undefined> = { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const timeoutMs = options.timeoutMs ?? 30_000;
  return options.process ? startProcess(args, env, timeoutMs) : startInProcess(args, env, timeoutMs);
}

function startProcess(args: readonly string[], env: Record<string, string | undefined>, timeoutMs: number): Running {
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
  const exited = new Promise<Exit>((resolve) => {
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  const parts = {
    stdout: () => stdout,
    stderr: () => stderr,
    interrupt: () => void child.kill("SIGINT"),
    ended: () => child.exitCode !== null || child.signalCode !== null,
    exited,
  };
  return { ...running(args, parts), child };
}

function startInProcess(args: readonly string[], env: Record<string, string | undefined>, timeoutMs: number): Running {
  let stdout = "";
  let stderr = "";
  let ended = false;
  const out = {
    stdout: (text: string) => {
      stdout += text;
    },
    stderr: (text: string) => {
      stderr += text;
    },
  };
  const controller = new AbortController();
  const io = {
    stdout: { write: out.stdout },
    stderr: { write: out.stderr },
    env,
    signal: controller.signal,
  };
  const done = likeAProcess(`flotilla ${args.join(" ")}`, out, () => run(args, io)).finally(() => {
    ended = true;
  });
  // A run cannot be killed: past its time it is asked to stop (as Ctrl-C would) and the test goes on without it.
  let timer: NodeJS.Timeout | undefined;
  const givenUp = new Promise<null>((resolve) => {
    timer = setTimeout(() => {
      controller.abort();
      resolve(null);
    }, timeoutMs);
  });
  const exited = Promise.race([done, givenUp])
    .finally(() => clearTimeout(timer))
    .then((code): Exit => ({ code, signal: null, stdout, stderr }));
  return running(args, { stdout: () => stdout, stderr: () => stderr, interrupt: () => controller.abort(), ended: () => ended, exited });
}

/** Runs `flotilla <args>` to its end. */
export function flotilla(prefix: string, args: readonly string[], options: CliOptions = {}): Promise<Exit> {
  return start(prefix, args, options).exited;
}

/** Runs `flotilla <args> --json`, expects exit 0, and parses its one line of output. */
export async function json<T = Record<string, unknown>>(prefix: string, args: readonly string[], options: CliOptions = {}): Promise<T> {
  const r = await flotilla(prefix, [...args, "--json"], options);
  if (r.code !== 0) throw new Error(`flotilla ${args.join(" ")} --json exited ${r.code}: ${r.stderr}`);
  const lines = r.stdout.trimEnd().split("\n");
  if (lines.length !== 1) throw new Error(`expected one line of JSON, got ${lines.length}:\n${r.stdout}`);
  return JSON.parse(lines[0]!) as T;
}

/** Each line of `text` parsed as JSON. */
export const lines = <T = Record<string, unknown>>(text: string): T[] =>
  text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);

/** A temporary folder for the file's tests, removed after them. */
export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "flotilla-cli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Writes `value` as JSON to `name` in `dir`; returns the path. */
export function writeJson(dir: string, name: string, value: unknown): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(value));
  return path;
}
