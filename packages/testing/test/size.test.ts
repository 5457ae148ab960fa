// The size knob of the long scenarios: CI's size unless FLOTILLA_TEST_SIZE=long (`pnpm test:long`).
import { describe, expect, it } from "vitest";
import { sized, testSize } from "../src/index.ts";

describe("sized", () => {
  it("gives the CI value by default and the long one under FLOTILLA_TEST_SIZE=long", () => {
    expect(testSize({})).toBe("ci");
    expect(testSize({ FLOTILLA_TEST_SIZE: "ci" })).toBe("ci");
    expect(sized({ ci: 1000, long: 2000 }, {})).toBe(1000);
    expect(sized({ ci: 1000, long: 2000 }, { FLOTILLA_TEST_SIZE: "long" })).toBe(2000);
  });

  it("refuses a size it does not know, rather than running some size silently", () => {
    expect(() => testSize({ FLOTILLA_TEST_SIZE: "full" })).toThrow('FLOTILLA_TEST_SIZE must be "ci" or "long", not "full"');
  });
});
