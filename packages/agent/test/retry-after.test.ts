import { describe, expect, it } from "vitest";
import { retryAfterMs } from "../src/retry-after.ts";

describe("retryAfterMs", () => {
  const now = Date.parse("2025-01-01T00:00:00Z");

  it("reads retry-after-ms first, then retry-after as seconds or as an HTTP date", () => {
    expect(retryAfterMs({ "retry-after-ms": "1500", "retry-after": "30" }, now)).toBe(1500);
    expect(retryAfterMs({ "retry-after-ms": "12.2" }, now)).toBe(13);
    expect(retryAfterMs({ "retry-after": "2" }, now)).toBe(2000);
    expect(retryAfterMs({ "retry-after": " 0.5 " }, now)).toBe(500);
    expect(retryAfterMs({ "retry-after": "Wed, 01 Jan 2025 00:00:07 GMT" }, now)).toBe(7000);
    // A date already past: no wait.
    expect(retryAfterMs({ "retry-after": "Tue, 31 Dec 2024 23:59:00 GMT" }, now)).toBe(0);
  });

  it("asks for nothing it cannot read: no headers, no header, a negative or garbled value", () => {
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs({}, now)).toBeUndefined();
    expect(retryAfterMs({ "retry-after": "" }, now)).toBeUndefined();
    expect(retryAfterMs({ "retry-after": "-3" }, now)).toBeUndefined();
    expect(retryAfterMs({ "retry-after": "soon" }, now)).toBeUndefined();
    // A garbled retry-after-ms leaves retry-after to decide.
    expect(retryAfterMs({ "retry-after-ms": "1e3", "retry-after": "4" }, now)).toBe(4000);
  });
});
