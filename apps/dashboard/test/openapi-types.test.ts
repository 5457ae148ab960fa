// The dashboard's types come from the gateway's OpenAPI document (src/generated/openapi.ts, made by
// `pnpm --filter @flotilla/dashboard gen:types` with openapi-typescript): the committed file is what a
// fresh generation writes, and a fresh generation compiles with `tsc --strict` (and stricter), its JSON
// values typed rather than `any`.
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { GENERATED_FILE, generateTypes } from "../scripts/gen-types.ts";

/** The workspace's compiler (TypeScript 7: the build's), not the TypeScript 5 openapi-typescript runs on. */
const tsc = join(import.meta.dirname, "..", "..", "..", "node_modules", "typescript", "bin", "tsc");

/** Compiles only when the generated types say what the dashboard relies on: `any` anywhere here fails it. */
const PROBE = `import type { components, paths } from "./openapi.ts";
type S = components["schemas"];
type IsAny<T> = 0 extends 1 & T ? true : false;
type Exactly<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const resultNotAny: IsAny<S["Task"]["result"]> = false;
export const resultIsJson: Exactly<Exclude<S["Task"]["result"], undefined>, S["JsonValue"]> = true;
export const nested: S["JsonValue"] = { a: [1, "two", null, { b: [true] }], c: null };
// @ts-expect-error a function is no JSON value
export const notJson: S["JsonValue"] = () => 1;
export const runPage: IsAny<paths["/v1/runs"]["get"]["responses"][200]["content"]["application/json"]["runs"]> = false;
export const next: string[] | undefined = ({} as S["GraphRun"])["definition"]["nodes"][0]?.next;
export const payload: IsAny<S["TaskEvent"]> = false;
`;

describe("the dashboard's generated API types", () => {
  const dir = mkdtempSync(join(tmpdir(), "flotilla-openapi-types-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  let fresh: string;

  it("src/generated/openapi.ts is what gen:types writes now (run it after changing the gateway's schemas)", async () => {
    fresh = await generateTypes();
    expect(readFileSync(GENERATED_FILE, "utf8") === fresh, "src/generated/openapi.ts is stale: pnpm --filter @flotilla/dashboard gen:types").toBe(true);
  });

  it("a fresh generation compiles with tsc --strict, its JSON values typed (not any)", () => {
    writeFileSync(join(dir, "openapi.ts"), fresh);
    writeFileSync(join(dir, "probe.ts"), PROBE);
    const res = spawnSync(
      process.execPath,
      [
        tsc,
        "--strict",
        "--exactOptionalPropertyTypes",
        "--noUncheckedIndexedAccess",
        "--skipLibCheck",
        "false",
        "--noEmit",
        "--target",
        "es2022",
        "--module",
        "nodenext",
        "--allowImportingTsExtensions",
        join(dir, "openapi.ts"),
        join(dir, "probe.ts"),
      ],
      { encoding: "utf8" },
    );
    expect(`${res.stdout}${res.stderr}`).toBe("");
    expect(res.status).toBe(0);
  });
});
