// Runs a README's test file (written to tooling/.docs-snippets/) as a reader's project would: from
// the workspace packages' sources, against REDIS_URL.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";
import { sourceConditions } from "../../vitest/preset.ts";

export default defineConfig({
  root: fileURLToPath(new URL("../../.docs-snippets/", import.meta.url)),
  resolve: { conditions: sourceConditions },
  ssr: { resolve: { conditions: sourceConditions } },
  test: { include: ["**/*.test.ts"], environment: "node", testTimeout: 30_000, hookTimeout: 30_000 },
});
