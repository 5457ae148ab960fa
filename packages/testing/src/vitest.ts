// @flotilla/testing/vitest: the test environment wired to vitest's hooks. The only module of the
// package that imports vitest.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import type { Worker } from "@flotilla/worker";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { TestServerError } from "./errors.ts";
import { expectedTemporalBinary, NO_TEMPORAL_NOTE, TEMPORAL_SETUP_COMMAND, temporalBinary } from "./temporal-server.ts";
import { createTestEnv, type TestEnv, type TestEnvOptions } from "./test-env.ts";

export interface UseFlotillaOptions extends TestEnvOptions {
  /** How long a test's workers may take to finish their running tasks after it. @default 1_000 */
  drainTimeoutMs?: number;
}

/**
 * A test environment for the enclosing `describe` (or file): the workers a test starts (in its
 * body or a `beforeEach`) stop after it; those started in `beforeAll` live until the end, when
 * `close()` stops everything, closes the clients and deletes every key under the prefix.
 */
export function useFlotilla(name: string, options: UseFlotillaOptions = {}): TestEnv {
  const { drainTimeoutMs, ...envOptions } = options;
  const env = createTestEnv(name, envOptions);
  let before = new Set<Worker>();
  beforeEach(() => {
    before = new Set(env.workers);
  });
  afterEach(async () => {
    await env.stopWorkers({ drainTimeoutMs, workers: env.workers.filter((w) => !before.has(w)) });
  });
  afterAll(() => env.close());
  return env;
}

/** `CI` set to anything but "", "0" or "false", as CI services do. */
const inCI = () => !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

/** How long the Temporal tests wait for a build still running in the background (a new machine's first build). */
const PENDING_BUILD_TIMEOUT_MS = 45 * 60_000;

/**
 * Waits for the background build FLOTILLA_TEMPORAL_PENDING names to write its outcome into that file
 * ("ok <binary>" or "failed <its log>"): the binary's path, or why there is none.
 */
async function awaitPendingBuild(statusFile: string): Promise<{ binary: string } | { failure: string }> {
  const deadline = Date.now() + PENDING_BUILD_TIMEOUT_MS;
  let said = false;
  for (;;) {
    const status = existsSync(statusFile) ? readFileSync(statusFile, "utf8").trim() : `failed: ${statusFile} is gone`;
    if (status.startsWith("ok ")) return { binary: status.slice(3) };
    if (status !== "") {
      const log = status.replace(/^failed:? ?/, "");
      const tail = log && existsSync(log) ? `: ${readFileSync(log, "utf8").trim().split("\n").slice(-5).join(" / ")}` : log ? ` (${log})` : "";
      return { failure: `the background build of the Temporal dev server failed${tail}` };
    }
    if (Date.now() > deadline)
      return { failure: `the background build of the Temporal dev server did not end within ${PENDING_BUILD_TIMEOUT_MS / 60_000} minutes` };
    if (!said) {
      process.stderr.write("[flotilla tests] waiting for the Temporal dev server's build (running in the background) before the Temporal tests\n");
      // Says so where the build (and a test of this wait) can see it: `<status file>.waiting`.
      try {
        writeFileSync(`${statusFile}.waiting`, `${process.pid}\n`);
      } catch {}
      said = true;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/**
 * The Temporal dev server binary for the tests of the enclosing `describe` (or file), or undefined
 * when there is none — then hooks that need it must return early, and:
 * - in CI (`CI` set), a `beforeAll` fails the block, saying how to get one: CI must run these tests;
 * - elsewhere each test skips with `NO_TEMPORAL_NOTE`, which the run's summary prints with its count.
 * While a build runs in the background (FLOTILLA_TEMPORAL_PENDING, set by `npm test` on a machine
 * that has none yet), it returns the path the build will write and a first `beforeAll` waits for it.
 * Call it first in the block, before the hooks that start Temporal.
 */
export function useTemporalBinary(): string | undefined {
  const binary = temporalBinary();
  if (binary) return binary;
  const pending = process.env.FLOTILLA_TEMPORAL_PENDING;
  if (pending) {
    const path = expectedTemporalBinary();
    beforeAll(async () => {
      const built = await awaitPendingBuild(pending);
      if ("failure" in built) missingBinary(built.failure);
      else if (built.binary !== path) throw new TestServerError(`the Temporal build wrote ${built.binary}, not ${path} where the tests look`);
    }, PENDING_BUILD_TIMEOUT_MS + 60_000);
    return path;
  }
  if (inCI()) {
    beforeAll(() => {
      const where = process.env.FLOTILLA_TEMPORAL_BIN ? ` (FLOTILLA_TEMPORAL_BIN=${process.env.FLOTILLA_TEMPORAL_BIN} does not exist)` : "";
      missingBinary(`there is no Temporal dev server binary${where}`);
    });
  } else {
    beforeEach((ctx) => ctx.skip(NO_TEMPORAL_NOTE));
  }
  return undefined;
}

/** In CI: the block fails, saying what to run. Elsewhere (a failed background build): its tests skip with the note. */
function missingBinary(why: string): void {
  if (inCI()) throw new TestServerError(`CI is set and ${why}: run \`${TEMPORAL_SETUP_COMMAND}\` before the tests`);
  throw new TestServerError(`${why}; \`${TEMPORAL_SETUP_COMMAND}\` builds it`);
}
