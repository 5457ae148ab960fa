import { describe, expect, it } from "vitest";
import { laneOrder } from "../src/lane-order.ts";

describe("laneOrder", () => {
  const rounds = (fairnessEvery: number, n: number) => Array.from({ length: n }, (_, i) => laneOrder(i, fairnessEvery)[0]);

  it("lets low and then normal pick first once each in every fairnessEvery rounds, high all the others", () => {
    expect(rounds(10, 20)).toEqual([
      ...["high", "high", "high", "high", "normal", "high", "high", "high", "high", "low"],
      ...["high", "high", "high", "high", "normal", "high", "high", "high", "high", "low"],
    ]);
    expect(rounds(2, 4)).toEqual(["normal", "low", "normal", "low"]);
  });

  it("is strict priority in every round with fairnessEvery 0", () => {
    expect(new Set(Array.from({ length: 50 }, (_, i) => laneOrder(i, 0).join(">")))).toEqual(new Set(["high>normal>low"]));
  });
});
