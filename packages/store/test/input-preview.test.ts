import { describe, expect, it } from "vitest";
import { inputPreviewOf } from "../src/input-preview.ts";

describe("inputPreviewOf", () => {
  it("shows a string as it is and anything else as its JSON, on one line", () => {
    expect(inputPreviewOf("Summarise the Q3 report")).toBe("Summarise the Q3 report");
    expect(inputPreviewOf({ city: "Oslo", days: [1, 2] })).toBe('{"city":"Oslo","days":[1,2]}');
    expect(inputPreviewOf(42)).toBe("42");
    expect(inputPreviewOf(false)).toBe("false");
    expect(inputPreviewOf("  line one\n\n\tline two  ")).toBe("line one line two");
    // The caller's JSON, when it has it, is used as it is.
    expect(inputPreviewOf({ a: 1 }, 100, '{"a":1}')).toBe('{"a":1}');
  });

  it("cuts at maxChars characters, marked with …, never inside an emoji", () => {
    expect(inputPreviewOf("x".repeat(100))).toBe("x".repeat(100));
    expect(inputPreviewOf("x".repeat(101))).toBe(`${"x".repeat(100)}…`);
    expect(inputPreviewOf("🚀".repeat(30), 10)).toBe(`${"🚀".repeat(10)}…`);
    expect(inputPreviewOf("ab cd ef", 3)).toBe("ab…");
    // A megabyte of input: only its head is looked at.
    expect(inputPreviewOf("y".repeat(1 << 20), 5)).toBe("yyyyy…");
    // Leading whitespace is not shown, however much of it there is.
    expect(inputPreviewOf(`${" ".repeat(500)}z`, 10)).toBe("z");
  });

  it("keeps none for a null input or with maxChars 0", () => {
    expect(inputPreviewOf(null)).toBeUndefined();
    expect(inputPreviewOf(undefined)).toBeUndefined();
    expect(inputPreviewOf("secret", 0)).toBeUndefined();
  });
});
