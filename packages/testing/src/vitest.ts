// @flotilla/testing/vitest: the test environment wired to vitest's hooks. The only module of the
// package that imports vitest.
import type { Worker } from "@flotilla/worker";
import { afterAll, afterEach, beforeEach } from "vitest";
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
