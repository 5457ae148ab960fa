import { describe, expect, it } from "vitest";
import { CorruptRecordError, ValidationError } from "./errors.ts";
import { AgentSpecSchema, parseInput, parseTaskRecord, SubmitOptionsSchema } from "./schemas.ts";

describe("schemas", () => {
  it("names the offending field of bad input", () => {
    const err = (() => {
      try {
        parseInput(AgentSpecSchema, { name: "a", model: "no-provider" }, "agent");
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ code: "VALIDATION_ERROR", field: "model" });
  });

  it("rejects unknown agent fields and unknown options", () => {
    expect(() => parseInput(AgentSpecSchema, { name: "a", model: "x:y", script: "rm -rf" }, "agent")).toThrow(ValidationError);
    expect(() => parseInput(SubmitOptionsSchema, { priority: 3 }, "options")).toThrow(ValidationError);
  });

  it("applies submit defaults", () => {
    expect(parseInput(SubmitOptionsSchema, {}, "options")).toEqual({ queue: "default", maxRetries: 0, metadata: {}, detailed: false });
  });

  it("reads a record back with types, and reports a corrupt one", () => {
    const record = parseTaskRecord(
      {
        taskId: "t",
        queue: "q",
        status: "COMPLETED",
        agent: "a",
        attempt: "1",
        createdAt: "10",
        detailed: "0",
        metadata: "{}",
        result: '{"ok":true}',
        error: '{"message":"m","code":"C"}',
      },
      "t",
    );
    expect(record).toMatchObject({ attempt: 1, result: { ok: true }, detailed: false, error: { code: "C" } });
    expect(parseTaskRecord({}, "t")).toBeUndefined();
    expect(() => parseTaskRecord({ taskId: "t", status: "WEIRD" }, "t")).toThrow(CorruptRecordError);
  });
});
