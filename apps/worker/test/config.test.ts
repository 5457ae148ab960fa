import { ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config.ts";

describe("loadConfig", () => {
  it("takes flags over environment over defaults", () => {
    const config = loadConfig(["--concurrency", "8"], { FLOTILLA_CONCURRENCY: "2", FLOTILLA_QUEUES: "a, b", REDIS_URL: "redis://r:1" });
    expect(config).toMatchObject({ concurrency: 8, queues: ["a", "b"], redis: "redis://r:1", prefix: "flotilla", drainTimeoutMs: 30_000 });
  });

  it("rejects bad values naming them", () => {
    expect(() => loadConfig([], { FLOTILLA_QUEUES: "a{b}" })).toThrow(ValidationError);
    expect(() => loadConfig(["--log-level", "loud"], {})).toThrow(/logLevel/);
    expect(() => loadConfig(["--unknown"], {})).toThrow();
  });

  it("answers --help", () => {
    expect(loadConfig(["--help"], {})).toBe("help");
  });
});
