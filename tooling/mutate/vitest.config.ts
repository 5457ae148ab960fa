// The vitest config Stryker runs (tooling/mutate/stryker.mjs): the projects of the target named in
// FLOTILLA_MUTATE_PROJECTS, each as its own vitest.config.ts defines it, plus a setup file that hands
// the active mutant to processes the tests spawn.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

const root = fileURLToPath(new URL("../..", import.meta.url));
const projects = (process.env.FLOTILLA_MUTATE_PROJECTS ?? "").split(",").filter(Boolean);
if (projects.length === 0) throw new Error("FLOTILLA_MUTATE_PROJECTS names no project: run this through `pnpm mutate`");

export default defineConfig({
  root,
  test: {
    projects: projects.map((name) => ({
      extends: `${root}packages/${name}/vitest.config.ts`,
      root: `${root}packages/${name}`,
      // Type-level tests (`*.test-d.ts`, run through tsc) judge no mutant, and Stryker's runner cannot read their results.
      test: { setupFiles: [fileURLToPath(new URL("./child-mutant.ts", import.meta.url))], typecheck: { enabled: false } },
    })),
    globalSetup: [`${root}tooling/vitest/global-setup.ts`],
  },
});
