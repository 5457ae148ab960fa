import { defineConfig } from "vitest/config";
import SummaryReporter from "./tooling/vitest/summary-reporter.ts";

export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "examples", "tooling"],
    globalSetup: ["./tooling/vitest/global-setup.ts"],
    reporters: ["default", new SummaryReporter()],
  },
});
