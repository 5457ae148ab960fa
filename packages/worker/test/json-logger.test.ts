import { afterEach, describe, expect, it, vi } from "vitest";
import { jsonLogger } from "../src/index.ts";

/** The JSON lines a call wrote to stdout. */
function capture(run: () => void): Array<Record<string, unknown>> {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, "write").mockImplementation((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  });
  try {
    run();
  } finally {
    spy.mockRestore();
  }
  for (const w of written) expect(w.endsWith("\n")).toBe(true);
  return written
    .join("")
    .trimEnd()
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

afterEach(() => vi.restoreAllMocks());

describe("jsonLogger", () => {
  it("writes one JSON object per line with level, time, message, its base fields and the call's", () => {
    const lines = capture(() => jsonLogger({ app: "w" }).info("hello", { n: 1 }));
    expect(lines).toEqual([{ level: "info", time: expect.any(String), msg: "hello", app: "w", n: 1 }]);
    expect(new Date(lines[0]!.time as string).toISOString()).toBe(lines[0]!.time);
  });

  it("writes info and above by default, and what the given level allows", () => {
    const levels = (logger: ReturnType<typeof jsonLogger>) =>
      capture(() => {
        logger.debug("d");
        logger.info("i");
        logger.warn("w");
        logger.error("e");
      }).map((l) => l.level);
    expect(levels(jsonLogger())).toEqual(["info", "warn", "error"]);
    expect(levels(jsonLogger({}, "debug"))).toEqual(["debug", "info", "warn", "error"]);
    expect(levels(jsonLogger({}, "warn"))).toEqual(["warn", "error"]);
    expect(levels(jsonLogger({}, "error"))).toEqual(["error"]);
  });

  it("writes an error as its name and message, wherever it sits", () => {
    const [line] = capture(() => jsonLogger().warn("failed", { err: new TypeError("bad"), nested: { cause: new Error("deep") } }));
    expect(line).toMatchObject({ err: { name: "TypeError", message: "bad" }, nested: { cause: { name: "Error", message: "deep" } } });
  });
});
