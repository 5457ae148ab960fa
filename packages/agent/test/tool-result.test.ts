import { ErrorCodes } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { toolOutputOf } from "../src/tool-result.ts";

const ok = (result: unknown) => ({ result, isError: false });
const invalid = (why: RegExp) => ({
  result: expect.stringMatching(new RegExp(`^\\[${ErrorCodes.TOOL_RESULT_INVALID}\\] tool "t" returned a value that is not JSON \\(${why.source}`)),
  isError: true,
});

describe("toolOutputOf (a tool's return value as JSON)", () => {
  it("keeps JSON as it is", () => {
    for (const value of [1, "s", true, null, [1, "a"], { a: { b: [null] } }]) expect(toolOutputOf("t", value)).toEqual(ok(value));
  });

  it("writes what JSON cannot hold the way JSON.stringify does, and a BigInt as its decimal string", () => {
    const fn = () => 1;
    expect(toolOutputOf("t", undefined)).toEqual(ok(null));
    expect(toolOutputOf("t", fn)).toEqual(ok(null));
    expect(toolOutputOf("t", Symbol("s"))).toEqual(ok(null));
    expect(toolOutputOf("t", 12345678901234567890n)).toEqual(ok("12345678901234567890"));
    expect(toolOutputOf("t", new Date(0))).toEqual(ok("1970-01-01T00:00:00.000Z"));
    expect(toolOutputOf("t", Number.NaN)).toEqual(ok(null));
    expect(
      toolOutputOf("t", { fn, sym: Symbol("s"), u: undefined, big: 2n, at: new Date(0), list: [fn, undefined, Symbol("s"), 3n], map: new Map([[1, 2]]) }),
    ).toEqual(ok({ big: "2", at: "1970-01-01T00:00:00.000Z", list: [null, null, null, "3"], map: {} }));
    expect(toolOutputOf("t", { toJSON: () => ({ inner: 1n }) })).toEqual(ok({ inner: "1" }));
  });

  it("turns a value JSON cannot hold at all into an error result with a stable code", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(toolOutputOf("t", cyclic)).toEqual(invalid(/Converting circular structure to JSON\)/));
    expect(
      toolOutputOf("t", {
        toJSON: () => {
          throw new Error("no can do");
        },
      }),
    ).toEqual(invalid(/no can do\)/));
    let deep: unknown = 1;
    for (let i = 0; i < 129; i++) deep = [deep];
    expect(toolOutputOf("t", deep)).toEqual(invalid(/nested deeper than 128 levels/));
    for (let i = 0; i < 100_000; i++) deep = [deep];
    expect(toolOutputOf("t", deep)).toEqual(invalid(/nested too deep/));
  });
});
