import { ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { decodeCursor, encodeCursor } from "../src/cursor.ts";

const raw = (text: string) => Buffer.from(text).toString("base64url");

describe("list cursors", () => {
  it("give back the position they were made from, whatever the id holds", () => {
    expect(decodeCursor(encodeCursor({ score: 1700000000123, id: "q/a:b" }))).toEqual({ score: 1700000000123, id: "q/a:b" });
    expect(decodeCursor(undefined)).toBeUndefined();
    expect(decodeCursor("")).toBeUndefined();
  });

  it.each([
    ["no separator", "12345"],
    ["no score", ":q/a"],
    ["a score that is not a number", "soon:q/a"],
    ["an infinite score", "Infinity:q/a"],
    ["no id", "12345:"],
  ])("are refused with %s", (_, text) => {
    expect(() => decodeCursor(raw(text))).toThrow(ValidationError);
    expect(() => decodeCursor(raw(text))).toThrow(expect.objectContaining({ field: "cursor" }));
  });
});
