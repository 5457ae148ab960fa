import { flotillaProject } from "@flotilla/tooling/vitest";
import { mergeConfig } from "vitest/config";

// The `*.test-d.ts` files are type-level tests: vitest runs them through tsc (typecheck mode).
export default mergeConfig(flotillaProject("client"), {
  test: { typecheck: { enabled: true, include: ["test/**/*.test-d.ts"], tsconfig: "./tsconfig.json" } },
});
