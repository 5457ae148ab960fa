import { defineProject } from "vitest/config";

/** Resolve workspace packages to their TypeScript sources so tests never need a build. */
export const sourceConditions = ["@flotilla/source", "module", "node", "import", "default"];

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
      // Integration tests share one Redis; files isolate by key prefix, so they may run in parallel.
      pool: "forks",
    },
  });
}
