import { describe, expect, it } from "vitest";
import { DropOldestBuffer } from "../src/index.ts";

describe("DropOldestBuffer", () => {
  it("hands items over in order, waits for more, and ends after close() once what is queued is read", async () => {
    const buffer = new DropOldestBuffer<string>(10, (n) => `lagged ${n}`);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const item of buffer) seen.push(item);
    })();
    buffer.push("a");
    await new Promise((r) => setTimeout(r, 10));
    expect(seen).toEqual(["a"]);
    buffer.push("b");
    buffer.push("c");
    buffer.close();
    buffer.push("after close");
    await reading;
    expect(seen).toEqual(["a", "b", "c"]);
  });

  it("keeps the newest `max` when the reader falls behind, and says how many it dropped first", async () => {
    const buffer = new DropOldestBuffer<string>(2, (n) => `lagged ${n}`);
    for (const item of ["1", "2", "3", "4", "5"]) buffer.push(item);
    expect(buffer.size).toBe(2);
    buffer.close();
    const seen: string[] = [];
    for await (const item of buffer) seen.push(item);
    expect(seen).toEqual(["lagged 3", "4", "5"]);
  });
});
