import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { parallelWorkers, testPass, testProjects } from "./tooling/vitest/groups.ts";
import SummaryReporter from "./tooling/vitest/summary-reporter.ts";

const root = fileURLToPath(new URL(".", import.meta.url));

// One project per workspace package, in groups (tooling/vitest/groups.ts): most files several at a
// time, the Temporal ones after them, the `@serial` ones alone at the end; on the cluster pass
// (FLOTILLA_TEST_REDIS=cluster) only the `@cluster` files.
export default defineConfig({
  test: {
    projects: testProjects(root, testPass(), parallelWorkers()),
    globalSetup: ["./tooling/vitest/global-setup.ts"],
    reporters: ["default", new SummaryReporter()],
  },
});
