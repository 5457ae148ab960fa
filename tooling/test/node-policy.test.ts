// One Node policy, stated once: every package.json of the workspace declares the same `engines.node`,
// and the root README's policy sentence names that version.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const POLICY = ">=22.15";

function manifests(): string[] {
  const nested = ["packages", "apps"].flatMap((dir) => readdirSync(join(ROOT, dir)).map((name) => join(dir, name, "package.json")));
  return [".", "examples", "tooling", ...nested.map(dirname)].map((dir) => join(dir, "package.json")).filter((p) => existsSync(join(ROOT, p)));
}

describe("Node policy", () => {
  it(`every package.json says engines.node ${POLICY}`, () => {
    const found = manifests().map((p) => [p, (JSON.parse(readFileSync(join(ROOT, p), "utf8")) as { engines?: { node?: string } }).engines?.node]);
    expect(found.length).toBeGreaterThan(15);
    expect(found.filter(([, node]) => node !== POLICY)).toEqual([]);
  });

  it("the root README states it once, with the same version", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.match(/Node ≥ \d+(\.\d+)?/g)).toEqual([`Node ≥ ${POLICY.slice(2)}`]);
    expect(readme).toMatch(/\*\*Node policy:\*\* Flotilla supports Node ≥ 22\.15 \(every package's `engines`\)/);
  });
});
