// Stryker activates a mutant inside the test process only (a global it sets before the tests). A
// process the tests spawn (a worker from apps/worker, a fixture) runs the same instrumented sources,
// and reads the active mutant from this environment variable instead; tests pass process.env on.
import { beforeAll, inject } from "vitest";

declare module "vitest" {
  export interface ProvidedContext {
    mode: "dry-run" | "mutant";
    activeMutant: string;
  }
}

const ENV = "__STRYKER_ACTIVE_MUTANT__";

beforeAll(() => {
  if (inject("mode") === "mutant") process.env[ENV] = inject("activeMutant");
  else delete process.env[ENV];
});
