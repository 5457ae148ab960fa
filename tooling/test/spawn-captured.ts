// A child process whose output a test reads while it runs and once it has ended.
import { type SpawnOptions, spawn } from "node:child_process";

export interface CapturedRun {
  /** Everything it wrote to stdout so far. */
  stdout(): string;
  /** Everything it wrote to stderr so far. */
  stderr(): string;
  /** Its exit code once it has closed (null when a signal ended it). */
  done: Promise<number | null>;
}

/** Starts `command` with stdin closed and stdout and stderr captured. */
export function spawnCaptured(command: string, args: readonly string[], options: Omit<SpawnOptions, "stdio"> = {}): CapturedRun {
  const child = spawn(command, [...args], { ...options, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr?.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  const done = new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  return { stdout: () => stdout, stderr: () => stderr, done };
}
