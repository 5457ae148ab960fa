import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

/** Runs the first-use fixture in a fresh Node, optionally with `node:sqlite` taken away. */
async function firstUse(withoutSqlite: boolean): Promise<Record<string, unknown>> {
  const hook = withoutSqlite ? ["--import", fixture("without-sqlite.ts")] : [];
  const { stdout } = await promisify(execFile)(process.execPath, [...hook, "--conditions=@flotilla/source", fixture("sqlite-first-use.ts")]);
  return JSON.parse(stdout.trim()) as Record<string, unknown>;
}

describe("SqliteMemoryStore on a Node without node:sqlite", () => {
  it("works where node:sqlite is built in", async () => {
    expect(await firstUse(false)).toEqual({ ok: true, entries: 1 });
  });

  it("fails on first use with a FlotillaError (UNSUPPORTED_NODE) naming the Node it needs, not ERR_UNKNOWN_BUILTIN_MODULE", async () => {
    const failure = await firstUse(true);
    expect(failure).toMatchObject({ ok: false, name: "FlotillaError", code: "UNSUPPORTED_NODE", retryable: false });
    expect(failure.message).toBe(
      `the SQLite memory store needs node:sqlite, built into Node >= 22.15 (Flotilla's supported Node); this is Node ${process.version}`,
    );
  });
});
