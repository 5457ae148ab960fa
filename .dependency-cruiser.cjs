// The boundary check (`pnpm boundaries`, run by CI): packages talk to each other only through
// their published entry points, and the pure parts stay pure. A test in tooling/test plants each
// kind of violation and checks this config refuses it.
/** Each workspace package's root folder (group 1). */
const PACKAGE = "^((?:packages|apps)/[^/]+|examples|tooling)/";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-relative-import-across-packages",
      severity: "error",
      comment: "Import another package by its name (@flotilla/x or a subpath it exports), never by a relative path into its files.",
      from: { path: PACKAGE },
      to: { dependencyTypes: ["local"], pathNot: "^$1/" },
    },
    {
      name: "no-deep-or-undeclared-import",
      severity: "error",
      comment:
        "An import that does not resolve reaches into a package past its `exports` map (e.g. @flotilla/store/src/record.ts), or names a package that is not a declared dependency; use what the package exports (or have it export what you need) and declare it.",
      from: {},
      to: { couldNotResolve: true },
    },
    {
      name: "no-circular",
      severity: "error",
      comment: "Modules must not import each other in a cycle.",
      from: {},
      to: { circular: true },
    },
    {
      name: "pure-core",
      severity: "error",
      comment: "@flotilla/core's root entry is pure (Temporal workflow code imports it): no Node built-ins, no ioredis. I/O lives in @flotilla/core/redis.",
      from: { path: "^packages/core/src/(?!redis/)" },
      to: { dependencyTypes: ["core"] },
    },
    {
      name: "pure-core-no-redis",
      severity: "error",
      comment: "@flotilla/core's root entry imports no Redis client: connections live in @flotilla/core/redis.",
      from: { path: "^packages/core/src/(?!redis/)" },
      to: { path: "/node_modules/ioredis/|^packages/core/src/redis/" },
    },
    {
      name: "deterministic-workflow",
      severity: "error",
      comment:
        "The Temporal workflow (and the tool loop it shares) runs in Temporal's sandbox: nothing it reaches may be a Node built-in, ioredis or OpenTelemetry.",
      from: { path: "^packages/temporal/src/workflow\\.ts$" },
      to: {
        reachable: true,
        path: "/node_modules/(ioredis|@opentelemetry)/|^packages/core/src/redis/",
      },
    },
    {
      name: "deterministic-workflow-no-builtins",
      severity: "error",
      comment: "The Temporal workflow may reach no Node built-in, however indirectly.",
      from: { path: "^packages/temporal/src/workflow\\.ts$" },
      to: {
        reachable: true,
        path: "^node:|^(assert|async_hooks|buffer|child_process|crypto|dns|events|fs|http|http2|https|net|os|path|perf_hooks|stream|tls|url|util|v8|vm|worker_threads|zlib)(/|$)",
      },
    },
  ],
  options: {
    // The graph as it runs: type-only imports are erased (the workflow names its activities by type only).
    // Erasing them takes TypeScript's JS API, which TypeScript 7 (the native compiler the build uses) does not
    // have: dependency-cruiser gets TypeScript 6 as its own `typescript` (packageExtensions in package.json).
    tsPreCompilationDeps: false,
    // Workspace packages resolve to their sources, through their `exports` maps, as tests see them.
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["@flotilla/source", "import", "module", "default"],
      extensions: [".ts", ".mts", ".js", ".mjs", ".d.ts"],
      mainFields: ["module", "main", "types"],
    },
    doNotFollow: { path: "node_modules" },
    // Our own build output, generated Lua and the README programs the docs test writes out; not a dependency's files (OpenTelemetry ships its code in dist/,
    // and an excluded module vanishes from the graph, rules and all).
    exclude: { path: `${PACKAGE}(dist|\\.turbo|\\.docs-snippets|src/generated)/` },
  },
};
