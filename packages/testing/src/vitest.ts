// @flotilla/testing/vitest: the test environment wired to vitest's hooks. The only module of the
// package that imports vitest.
import type { Worker } from "@flotilla/worker";
import { afterAll, afterEach, beforeAll, beforeEach } from "vitest";
import { TestServerError } from "./errors.ts";
import { NO_TEMPORAL_NOTE, TEMPORAL_SETUP_COMMAND, temporalBinary } from "./temporal-server.ts";
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

/**
 * The Temporal dev server binary for the tests of the enclosing `describe` (or file), or undefined
 * when there is none — then hooks that need it must return early, and:
 * - in CI (`CI` set), a `beforeAll` fails the block, saying how to get one: CI must run these tests;
 * - elsewhere each test skips with `NO_TEMPORAL_NOTE`, which the run's summary prints with its count.
 * Call it first in the block, before the hooks that start Temporal.
 */
export function useTemporalBinary(): string | undefined {
  const binary = temporalBinary();
  if (binary) return binary;
  if (inCI()) {
    beforeAll(() => {
      const where = process.env.FLOTILLA_TEMPORAL_BIN ? ` (FLOTILLA_TEMPORAL_BIN=${process.env.FLOTILLA_TEMPORAL_BIN} does not exist)` : "";
      throw new TestServerError(`CI is set and there is no Temporal dev server binary${where}: run \`${TEMPORAL_SETUP_COMMAND}\` before the tests`);
    });
  } else {
    beforeEach((ctx) => ctx.skip(NO_TEMPORAL_NOTE));
  }
  return undefined;
}
