import { defineProject } from "vitest/config";

/**
 * Resolve workspace packages to their TypeScript sources so tests never need a build. Vitest (>= 4)
 * also hands the SSR conditions to Node as `--conditions` for what it loads itself (`require()`
 * included), so only conditions Node's own resolution agrees with belong here: "module" or
 * "import" would make Node pick ESM files for `require()` (pg-pool) and extensionless ESM
 * (@opentelemetry/api). Vite adds "import"/"require" and "default" by itself.
 */
export const sourceConditions = ["@flotilla/source", "node", "development|production"];

export function flotillaProject(name: string) {
  return defineProject({
    resolve: { conditions: sourceConditions },
    ssr: { resolve: { conditions: sourceConditions } },
    test: {
      name,
      include: ["src/**/*.test.ts", "test/**/*.test.ts"],
      environment: "node",
      testTimeout: 30_000,
      hookTimeout: 30_000,
      // expect.poll waits for a condition: vitest's 1 s default failed a dashboard test once while
      // four files ran beside it on two cores. A poll that never succeeds still fails, after 10 s.
      expect: { poll: { timeout: 10_000 } },
      // Integration tests share one Redis; files isolate by key prefix, so they may run in parallel.
      pool: "forks",
    },
  });
}
