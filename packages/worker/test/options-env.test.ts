// Issue 40.3: `new Worker()` reads FLOTILLA_PREFIX and REDIS_URL as every entry point does (before, it
// ignored FLOTILLA_PREFIX: next to `distributed()` with the variable set, it served another prefix and
// the task waited), the option given winning, each checked at construction.
import { afterEach, describe, expect, it } from "vitest";
import { resolveWorkerOptions, Worker } from "../src/index.ts";

const saved = { FLOTILLA_PREFIX: process.env.FLOTILLA_PREFIX, REDIS_URL: process.env.REDIS_URL };
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

describe("the worker's settings from the environment", () => {
  it("prefix: the option, else FLOTILLA_PREFIX, else flotilla", () => {
    process.env.FLOTILLA_PREFIX = "from-env";
    expect(resolveWorkerOptions({}).prefix).toBe("from-env");
    expect(resolveWorkerOptions({ prefix: "given" }).prefix).toBe("given");
    process.env.FLOTILLA_PREFIX = " ";
    expect(resolveWorkerOptions({}).prefix).toBe("flotilla");
  });

  it("a bad FLOTILLA_PREFIX or REDIS_URL is a ValidationError from the constructor, naming the variable", () => {
    process.env.FLOTILLA_PREFIX = "a{b}";
    expect(() => new Worker()).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", field: "FLOTILLA_PREFIX" }));
    process.env.FLOTILLA_PREFIX = "";
    process.env.REDIS_URL = "http://127.0.0.1:6379";
    expect(() => new Worker()).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", field: "REDIS_URL" }));
    // Given in code, it is the option that is named.
    expect(() => new Worker({ redis: "http://127.0.0.1:6379" })).toThrow(expect.objectContaining({ field: "redis" }));
  });
});
