// The boundary check refuses each kind of violation it exists for. Each case plants a file in a
// package (removed afterwards; git ignores the name) and runs dependency-cruiser on it with the
// repository's own configuration, as CI does for the whole tree.
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import { afterEach, beforeAll, describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const config = createRequire(import.meta.url)(join(ROOT, ".dependency-cruiser.cjs")) as { forbidden: unknown[]; options: Record<string, unknown> };
const planted: string[] = [];

function plant(dir: string, name: string, source: string): string {
  const path = join(ROOT, dir, `__planted__${name}.ts`);
  writeFileSync(path, source);
  planted.push(path);
  return path.slice(ROOT.length + 1);
}

async function violations(files: string[], forbidden: unknown[] = config.forbidden): Promise<string[]> {
  const cwd = process.cwd();
  process.chdir(ROOT);
  try {
    const { output } = await cruise(files, { ...config.options, validate: true, ruleSet: { forbidden } } as never);
    return (output as ICruiseResult).summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
  } finally {
    process.chdir(cwd);
  }
}

beforeAll(() => {
  // Left behind by an interrupted run.
  for (const dir of ["packages/worker/src", "packages/core/src", "packages/temporal/src", "packages/agent/src"]) {
    for (const f of readdirSync(join(ROOT, dir))) if (f.startsWith("__planted__")) rmSync(join(ROOT, dir, f));
  }
});
afterEach(() => {
  for (const p of planted.splice(0)) if (existsSync(p)) rmSync(p);
});

describe("the boundary check", () => {
  it("refuses a deep import into another package and a relative import across packages", async () => {
    const file = plant(
      "packages/worker/src",
      "deep",
      'import { RECORD_FIELDS } from "@flotilla/store/src/record.ts";\nimport { TaskStore } from "../../store/src/task-store.ts";\nexport const x = [RECORD_FIELDS, TaskStore];\n',
    );
    expect(await violations([file])).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^no-deep-or-undeclared-import: .*__planted__deep\.ts -> @flotilla\/store\/src\/record\.ts$/),
        expect.stringMatching(/^no-relative-import-across-packages: .*__planted__deep\.ts -> packages\/store\/src\/task-store\.ts$/),
      ]),
    );
  });

  it("refuses a package that is not a declared dependency", async () => {
    const file = plant("packages/core/src", "undeclared", 'import { Worker } from "@flotilla/worker";\nexport const x = Worker;\n');
    expect(await violations([file])).toEqual([expect.stringMatching(/^no-deep-or-undeclared-import: .* -> @flotilla\/worker$/)]);
  });

  it("keeps core's root entry pure: no Node built-in, no Redis client", async () => {
    const file = plant(
      "packages/core/src",
      "impure",
      'import { createHash } from "node:crypto";\nimport { Redis } from "ioredis";\nexport const x = [createHash, Redis];\n',
    );
    const found = await violations([file]);
    expect(found).toEqual(expect.arrayContaining([expect.stringMatching(/^pure-core: .*crypto$/), expect.stringMatching(/^pure-core-no-redis: .*ioredis/)]));
  });

  it("refuses an import cycle", async () => {
    const a = plant("packages/worker/src", "cycle-a", 'import { b } from "./__planted__cycle-b.ts";\nexport const a = () => b;\n');
    const b = plant("packages/worker/src", "cycle-b", 'import { a } from "./__planted__cycle-a.ts";\nexport const b = () => a;\n');
    expect(await violations([a, b])).toEqual(expect.arrayContaining([expect.stringMatching(/^no-circular: /)]));
  });

  it("keeps the workflow from reaching OpenTelemetry, which ships its code in dist/", async () => {
    const file = plant("packages/agent/src", "telemetry", 'import { trace } from "@opentelemetry/api";\nexport const x = trace;\n');
    // The workflow rule as configured, from the planted file: the workflow reaches agent's sources through the tool loop.
    const rule = (config.forbidden as Array<{ name: string; from: object }>).find((r) => r.name === "deterministic-workflow");
    const forbidden = [{ ...rule, from: { path: `^${file.replace(/[.]/g, "\\.")}$` } }];
    expect(await violations([file], forbidden)).toEqual([
      expect.stringMatching(/^deterministic-workflow: .*__planted__telemetry\.ts -> (.*\/)?node_modules\/.*\/@opentelemetry\/api\//),
    ]);
  });

  it("passes the tree as it is", async () => {
    expect(await violations(["packages", "apps", "examples", "tooling"])).toEqual([]);
  }, 60_000);
});
