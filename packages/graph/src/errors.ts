import { ErrorCodes, FlotillaError, ValidationError } from "@flotilla/core";
import type { RunStatus } from "./run-store.ts";

/** A graph run that does not exist (never started, or expired): code RUN_NOT_FOUND. */
export class RunNotFoundError extends FlotillaError {
  readonly runId: string;
  constructor(runId: string) {
    super(ErrorCodes.RUN_NOT_FOUND, `no graph run ${runId}`, { details: { runId } });
    this.runId = runId;
  }
}

/**
 * A `retry()` refused: only a FAILED or CANCELLED run resumes. A ValidationError (code
 * VALIDATION_ERROR, field `runId`), as a task handle's refused retry is; `status` is the run's.
 */
export class RunNotRetryableError extends ValidationError {
  readonly runId: string;
  readonly status: RunStatus;
  constructor(runId: string, status: RunStatus) {
    super("graph run", [{ path: "runId", message: `run ${runId} is ${status}; only a FAILED or CANCELLED run can be retried` }], {
      details: { runId, status },
    });
    this.runId = runId;
    this.status = status;
  }
}
