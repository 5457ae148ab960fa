// pnpm test:affected: which packages' tests a change runs — the packages it touches and every package
// that depends on them — and when it runs everything (a change outside the packages).
import { describe, expect, it } from "vitest";
import { affectedDirs, workspacePackages } from "../scripts/test-affected.mjs";

const packages = workspacePackages() as Array<{ dir: string; name: string; deps: string[] }>;

describe("pnpm test:affected", () => {
  it("runs a package's tests and those of every package that depends on it, to the end of the chain", () => {
    const dirs = affectedDirs(["packages/broker/src/broker.ts"], packages) as string[];
    expect(dirs).toContain("packages/broker");
    // store depends on broker, worker on store, the worker app on worker: each runs.
    expect(dirs).toEqual(expect.arrayContaining(["packages/store", "packages/worker", "apps/worker"]));
    // core is below broker: a change to broker cannot break it.
    expect(dirs).not.toContain("packages/core");
  });

  it("runs nothing but the app for a change to an app nothing depends on", () => {
    expect(affectedDirs(["apps/gateway/src/app.ts"], packages)).toEqual(
      ["apps/gateway"].concat(packages.filter((p) => p.deps.includes("@flotilla/gateway")).map((p) => p.dir)).sort(),
    );
  });

  it("runs every package's tests for a change to the test helpers, but not for a change to a package they drive", () => {
    const helpers = affectedDirs(["packages/testing/src/wait-for.ts"], packages) as string[];
    expect(helpers).toEqual(expect.arrayContaining(["packages/core", "packages/store", "apps/worker"]));
    // Through the helpers every package would depend on the worker; only what really depends on it runs.
    expect(affectedDirs(["packages/worker/src/worker.ts"], packages)).not.toContain("packages/core");
  });

  it("runs everything for a change to the root config, the lockfile or the test tooling, and nothing for prose", () => {
    expect(affectedDirs(["pnpm-lock.yaml"], packages)).toBe("everything");
    expect(affectedDirs(["tooling/vitest/groups.ts"], packages)).toBe("everything");
    expect(affectedDirs(["vitest.config.ts"], packages)).toBe("everything");
    expect(affectedDirs(["README.md", ".changeset/x.md", "docs/capacity.md"], packages)).toEqual([]);
  });

  it("knows every workspace package and what of the workspace it depends on", () => {
    const worker = packages.find((p) => p.name === "@flotilla/worker")!;
    expect(worker.dir).toBe("packages/worker");
    expect(worker.deps).toEqual(expect.arrayContaining(["@flotilla/store", "@flotilla/broker"]));
    expect(packages.length).toBeGreaterThan(20);
  });
});
