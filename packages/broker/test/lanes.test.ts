import { createKeys, PRIORITIES } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { delayedKeys, laneKeys, laneNumber, laneOf, laneOrderArg } from "../src/lanes.ts";

const keys = createKeys("lanes");

describe("lane numbering", () => {
  it("numbers high 1, normal 2, low 3, as the scripts do, normal when unsaid", () => {
    expect(PRIORITIES.map(laneNumber)).toEqual([1, 2, 3]);
    expect(laneNumber(undefined)).toBe(2);
    expect([1, 2, 3, "3"].map(laneOf)).toEqual(["high", "normal", "low", "low"]);
    expect([0, 4, "x", undefined].map(laneOf)).toEqual(["normal", "normal", "normal", "normal"]);
  });

  it("writes a lane order as the scripts take it", () => {
    expect(laneOrderArg(["low", "high", "normal"])).toBe("3,1,2");
  });

  it("lists a queue's lanes and delayed sets in script order", () => {
    expect(laneKeys(keys, "q")).toEqual([keys.lane("q", "high"), keys.lane("q", "normal"), keys.lane("q", "low")]);
    expect(delayedKeys(keys, "q")).toEqual([keys.delayed("q", "high"), keys.delayed("q", "normal"), keys.delayed("q", "low")]);
  });
});
