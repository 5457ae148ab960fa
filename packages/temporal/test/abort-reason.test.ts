import { ErrorCodes } from "@flotilla/core";
import { AbortReason } from "@flotilla/worker";
import { describe, expect, it } from "vitest";
import { abortReasonOf } from "../src/abort-reason.ts";

const seen = (reason: AbortReason) => ({ isAbortReason: reason instanceof AbortReason, code: reason.code, message: reason.message });

describe("abortReasonOf: the reason a cancelled activity aborts its work with", () => {
  it("is the task's cancel, with its reason, whatever Temporal says", () => {
    for (const temporal of ["CANCELLED", "NOT_FOUND"]) {
      expect(seen(abortReasonOf(temporal, { cancelRequestedAt: 1, cancelReason: "enough", timeoutMs: 10, startedAt: 0 }, 100))).toEqual({
        isAbortReason: true,
        code: ErrorCodes.CANCELLED,
        message: "enough",
      });
    }
  });

  it("is the task's timeout, worded as the worker words it, once it has passed", () => {
    expect(seen(abortReasonOf("NOT_FOUND", { timeoutMs: 500, startedAt: 1000 }, 1500))).toEqual({
      isAbortReason: true,
      code: ErrorCodes.TIMEOUT,
      message: "timed out after 500 ms",
    });
    expect(abortReasonOf("CANCELLED", { timeoutMs: 500, startedAt: 1000 }, 1499).code).toBe(ErrorCodes.CANCELLED);
  });

  it("is Temporal's own reason otherwise, in the same shape", () => {
    expect(seen(abortReasonOf("WORKER_SHUTDOWN", {}, 0))).toMatchObject({ code: ErrorCodes.SHUTDOWN });
    expect(seen(abortReasonOf("CANCELLED", undefined, 0))).toEqual({
      isAbortReason: true,
      code: ErrorCodes.CANCELLED,
      message: "the activity was cancelled (CANCELLED)",
    });
  });

  it("is STALE_ATTEMPT when Temporal no longer holds the attempt (NOT_FOUND), as Redis mode stops a run whose entry was taken", () => {
    expect(seen(abortReasonOf("NOT_FOUND", undefined, 0))).toEqual({
      isAbortReason: true,
      code: ErrorCodes.STALE_ATTEMPT,
      message: "Temporal no longer holds this activity attempt (it timed out, or its workflow closed)",
    });
  });
});
