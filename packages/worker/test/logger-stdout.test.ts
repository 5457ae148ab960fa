import { describe, expect, it, vi } from "vitest";
import { jsonLogger } from "../src/index.ts";

// Its own file: the guard is once per process (module state), and the last test leaves stdout "gone".
describe("jsonLogger when stdout's reader goes away", () => {
  it("guards stdout once however many loggers are made", () => {
    const before = process.stdout.listenerCount("error");
    jsonLogger();
    jsonLogger({ app: "w" }, "debug");
    expect(process.stdout.listenerCount("error")).toBe(before + 1);
  });

  it("survives stdout failing (EPIPE) and drops its lines from then on instead of crashing the process", () => {
    const log = jsonLogger();
    const epipe = Object.assign(new Error("write EPIPE"), { code: "EPIPE" });
    // Unheard, an 'error' event throws: the process would die.
    expect(() => process.stdout.emit("error", epipe)).not.toThrow();
    const write = vi.spyOn(process.stdout, "write").mockImplementation(() => true);
    try {
      log.error("nobody reads this");
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
  });
});
