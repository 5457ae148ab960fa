// Runs vitest in a child process, as a user would from a shell, for the tests of what the run itself
// reports (its summary, its exit code).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { spawnCaptured } from "./spawn-captured.ts";

const require = createRequire(import.meta.url);

/** The vitest CLI this workspace installed (its `bin` entry, which vitest 3 to 5 all declare). */
function vitestCli(): string {
  const pkgPath = require.resolve("vitest/package.json");
  const bin = JSON.parse(readFileSync(pkgPath, "utf8")).bin;
  return join(dirname(pkgPath), typeof bin === "string" ? bin : bin.vitest);
}

export interface VitestRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The summary reporter's closing line, `tests: N passed, N failed, N skipped`. */
  closingLine: string | undefined;
  /** The lines of stdout that trim to something, in order. */
  lines: string[];
}

/**
 * `vitest run <args>` in `cwd`, with `env` over this process's environment minus what the running
 * vitest set for its own workers (a child that inherits them believes it is a worker).
 */
/** `env` without the variables set to `undefined`: how a caller unsets one it would inherit. */
const definedOnly = (env: Record<string, string | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));

export async function runVitest(cwd: string, args: string[], env: Record<string, string | undefined> = {}): Promise<VitestRun> {
  const base = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("VITEST") && k !== "TEST" && k !== "NODE_ENV"));
  const child = spawnCaptured(process.execPath, [vitestCli(), "run", ...args], { cwd, env: definedOnly({ ...base, NO_COLOR: "1", FORCE_COLOR: "0", ...env }) });
  const code = await child.done;
  const stdout = child.stdout();
  const lines = stdout
    .split("\n")
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== "");
  return { code, stdout, stderr: child.stderr(), lines, closingLine: lines.findLast((l) => l.startsWith("tests: ")) };
}
