import { describe, expect, it } from "vitest";
import { ErrorCodes, ValidationError } from "../src/errors.ts";
import { checkJsonDepth } from "../src/json-depth.ts";

/** `levels` objects (or arrays) inside each other, a scalar innermost. */
function nested(levels: number, kind: "object" | "array" = "object"): unknown {
  let value: unknown = 1;
  for (let i = 0; i < levels; i++) value = kind === "object" ? { a: value } : [0, value];
  return value;
}

function failure(fn: () => void): ValidationError {
  try {
    fn();
  } catch (err) {
    return err as ValidationError;
  }
  throw new Error("expected a ValidationError");
}

describe("checkJsonDepth", () => {
  it("takes scalars and values exactly max levels deep, objects and arrays alike", () => {
    for (const scalar of [1, "s", null, true, undefined]) checkJsonDepth(scalar, 0, "input");
    checkJsonDepth({}, 1, "input");
    checkJsonDepth(nested(64), 64, "input");
    checkJsonDepth(nested(64, "array"), 64, "input");
    // Wide is not deep: many siblings at one level.
    checkJsonDepth({ a: {}, b: [{}], c: { d: [] } }, 3, "input");
  });

  it("refuses one level more with a ValidationError whose message names no path", () => {
    const err = failure(() => checkJsonDepth({ x: [nested(64)] }, 65, "metadata"));
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.code).toBe(ErrorCodes.VALIDATION);
    expect(err.field).toBe("metadata");
    expect(err.message).toBe("invalid metadata: metadata: nested deeper than 65 levels of objects and arrays (maxJsonDepth)");
    expect(failure(() => checkJsonDepth(nested(2, "array"), 1, "input")).code).toBe(ErrorCodes.VALIDATION);
    // The deepest branch counts, wherever it is among its siblings.
    expect(failure(() => checkJsonDepth({ a: 1, b: {}, c: { d: { e: {} } } }, 3, "input")).field).toBe("input");
  });

  it("measures 100,000 levels without a RangeError", () => {
    expect(failure(() => checkJsonDepth(nested(100_000), 128, "input")).code).toBe(ErrorCodes.VALIDATION);
    expect(failure(() => checkJsonDepth(nested(100_000, "array"), 128, "input")).code).toBe(ErrorCodes.VALIDATION);
  });

  it("does not follow a reference back up its path (a cycle), and counts an object shared by siblings each time", () => {
    const cyclic: Record<string, unknown> = { a: { b: {} } };
    (cyclic.a as Record<string, unknown>).back = cyclic;
    checkJsonDepth(cyclic, 3, "input");
    const shared = nested(3);
    checkJsonDepth({ x: shared, y: shared }, 4, "input");
    expect(failure(() => checkJsonDepth({ x: shared, y: [shared] }, 4, "input")).code).toBe(ErrorCodes.VALIDATION);
  });
});
