// checkJson: the first thing JSON cannot carry, named by its path (from `root`) and why; plain JSON,
// null-prototype objects and shared references pass; `only: "cycles"` lets other values through.
import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/errors.ts";
import { checkJson } from "../src/json-check.ts";

function failure(fn: () => void): ValidationError {
  try {
    fn();
  } catch (err) {
    return err as ValidationError;
  }
  throw new Error("expected a ValidationError");
}

describe("checkJson", () => {
  it("passes JSON: scalars, null, nested plain objects and arrays, null-prototype objects, shared references", () => {
    const shared = { n: 1 };
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    for (const value of [null, 0, -1.5, "", true, [], {}, { a: [1, { b: null }], c: "x" }, bare, { x: shared, y: [shared] }]) {
      expect(() => checkJson(value, "input")).not.toThrow();
    }
  });

  it("names the first bad value by its path and says why; the first one in key order", () => {
    const err = failure(() => checkJson({ ok: 1, list: [1, { at: new Date(0) }], later: 1n }, "input"));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe("VALIDATION_ERROR");
    expect(err.field).toBe("input.list.1.at");
    expect(err.message).toBe("invalid input: input.list.1.at: a Date is not JSON (send date.toISOString() or date.getTime())");
    expect(failure(() => checkJson(Number.NEGATIVE_INFINITY, "input")).message).toBe("invalid input: input: -Infinity is not JSON (JSON numbers are finite)");
    expect(failure(() => checkJson({ e: new Error("x") }, "input")).issues[0]!.message).toBe("an Error is not JSON (send a plain object)");
    expect(failure(() => checkJson({ u: new Uint8Array(2) }, "input")).issues[0]!.message).toBe("a Uint8Array is not JSON (send a plain object)");
  });

  it("roots the path as asked: another name, or none (a value whose keys are fields)", () => {
    expect(failure(() => checkJson({ a: { b: Symbol("s") } }, "options", { root: "metadata" })).field).toBe("metadata.a.b");
    expect(failure(() => checkJson({ a: { b: Symbol("s") } }, "options", { root: "" })).field).toBe("a.b");
    expect(failure(() => checkJson(undefined, "options", { root: "" })).field).toBe("options");
  });

  it("with only: cycles, lets other values through but names a loop from `what`", () => {
    const options: Record<string, unknown> = { runAt: new Date(0), meta: { n: 1n } };
    expect(() => checkJson(options, "options", { root: "", only: "cycles" })).not.toThrow();
    (options.meta as Record<string, unknown>).back = options;
    const err = failure(() => checkJson(options, "options", { root: "", only: "cycles" }));
    expect(err.field).toBe("meta.back");
    expect(err.issues[0]!.message).toBe("circular reference: options.meta.back refers back to options; only JSON values can be sent");
  });
});
