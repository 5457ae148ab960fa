// The `flotilla` command as a real process: the TypeScript source run by Node (--conditions picks the
// workspace packages' sources), on the test Redis, under a test's prefix.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** Added to (or overriding) the environment: the test Redis and FLOTILLA_PREFIX=prefix. */
  env?: Record<string, string | undefined>;
  /** Killed (SIGKILL) after this long, so a hung command fails its test rather than the run. @default 30_000 */
  timeoutMs?: number;
}

/** A running `flotilla` process: what it wrote so far, and its exit. */
export interface Running {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once what it wrote (stdout, or stderr with `on: "stderr"`) passes `check`. */
  output(check: (text: string) => boolean, options?: { on?: "stdout" | "stderr"; timeoutMs?: number }): Promise<string>;
  exited: Promise<Exit>;
}

/** Starts `flotilla <args>` on the test Redis under `prefix`. */
export function start(prefix: string, args: readonly string[], options: CliOptions = {}): Running {
  const env: Record<string, string | undefined> = { ...process.env, ...testRedisEnv(), FLOTILLA_PREFIX: prefix, ...options.env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main, ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (d: string) => {
    stdout += d;
  });
  child.stderr!.setEncoding("utf8").on("data", (d: string) => {
    stderr += d;
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  const exited = new Promise<Exit>((resolve) => {
    child.once("close", (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    output: (check, { on = "stdout", timeoutMs = 20_000 } = {}) =>
      waitFor(
        () => {
          const text = on === "stdout" ? stdout : stderr;
          if (check(text)) return text;
          if (child.exitCode !== null) throw new Error(`flotilla ${args.join(" ")} exited ${child.exitCode} first:\n${stdout}\n${stderr}`);
          return undefined;
        },
        { timeoutMs, what: `flotilla ${args.join(" ")} to write what the test waits for` },
      ),
    exited,
  };
}

/** Runs `flotilla <args>` to its end. */
export function flotilla(prefix: string, args: readonly string[], options: CliOptions = {}): Promise<Exit> {
  return start(prefix, args, options).exited;
}

/** Runs `flotilla <args> --json`, expects exit 0, and parses its one line of output. */
export async function json<T = Record<string, unknown>>(prefix: string, args: readonly string[]): Promise<T> {
  const r = await flotilla(prefix, [...args, "--json"]);
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
