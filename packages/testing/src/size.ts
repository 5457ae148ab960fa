// How big a test's scenario is: the size CI runs (the default), or the full one `pnpm test:long` runs
// before a release (FLOTILLA_TEST_SIZE=long). Kill storms, soaks and fleets take their counts from
// here, so CI stays fast while a release still runs them at full size; the CI size is chosen so that
// the guard each scenario protects still fails when broken (TESTING.md, "Sizes").

/** The sizes a scenario comes in. */
export type TestSize = "ci" | "long";

/** The size of this run: FLOTILLA_TEST_SIZE ("ci" or "long"), "ci" when unset. */
export function testSize(env: NodeJS.ProcessEnv = process.env): TestSize {
  const given = env.FLOTILLA_TEST_SIZE;
  if (given === undefined || given === "" || given === "ci") return "ci";
  if (given === "long") return "long";
  throw new Error(`FLOTILLA_TEST_SIZE must be "ci" or "long", not "${given}"`);
}

/** The value for this run's size: `sized({ ci: 500, long: 2000 })`. */
export function sized<T>(values: { ci: T; long: T }, env: NodeJS.ProcessEnv = process.env): T {
  return values[testSize(env)];
}
