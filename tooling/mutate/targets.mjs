// What `pnpm mutate <target>` mutates and which tests judge the mutants. A target is a package whose
// bugs lose or duplicate work; its mutants are judged by its own tests (the `projects` of the root
// vitest config), so the score says how well the package's own suite guards it.

/** Never mutated anywhere: built from lua/ (src/generated), barrels of re-exports (index.ts), and the
 * test kits behind the `/testing` subpath, which are test code, not code that runs tasks. */
const EXCLUDED = ["!**/src/generated/**", "!**/src/index.ts", "!**/src/testing.ts"];

/**
 * Projects whose tests spawn worker processes (`node apps/worker/src/main.ts`, test fixtures). Code
 * that runs only in such a child is invisible to Stryker's per-test coverage, so a target whose
 * scope includes one of these, and whose code the children load, is run with coverage analysis off.
 */
export const SPAWNING_PROJECTS = ["client"];

/** Packages the spawned workers load (apps/worker's dependency tree). */
export const LOADED_BY_CHILDREN = ["worker", "agent", "store", "broker", "events", "cancel"];

/** @type {Record<string, { mutate: string[]; projects: string[] }>} */
export const TARGETS = {
  cancel: { mutate: ["packages/cancel/src/**/*.ts"], projects: ["cancel"] },
  events: { mutate: ["packages/events/src/**/*.ts"], projects: ["events"] },
  store: { mutate: ["packages/store/src/**/*.ts"], projects: ["store"] },
  broker: { mutate: ["packages/broker/src/**/*.ts"], projects: ["broker"] },
  worker: { mutate: ["packages/worker/src/**/*.ts"], projects: ["worker"] },
  client: { mutate: ["packages/client/src/**/*.ts"], projects: ["client"] },
  // The run loop only: the rest of the agent package (models, tools, swarms) loses no work when wrong.
  agent: { mutate: ["packages/agent/src/loop*.ts", "packages/agent/src/run.ts", "packages/agent/src/turn.ts"], projects: ["agent"] },
};

/** The order `all` runs them in: smallest first, so the cheap answers come early. */
export const ORDER = ["cancel", "events", "store", "broker", "agent", "worker", "client"];

export function mutateGlobs(target) {
  return [...TARGETS[target].mutate, ...EXCLUDED];
}
