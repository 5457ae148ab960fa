// The reason a cancelled activity aborts its model call or tool with: the one Redis mode's worker
// gives a run's signal, so a tool cannot tell the modes apart by it.
import { ErrorCodes } from "@flotilla/core";
import type { TaskResult } from "@flotilla/store";
import { AbortReason } from "@flotilla/worker";

/** What of the task's record tells why its run was stopped. */
export type AbortCause = Pick<TaskResult, "cancelRequestedAt" | "cancelReason" | "timeoutMs" | "startedAt">;

/**
 * Why an activity Temporal cancelled (`temporalReason`: "CANCELLED", or "NOT_FOUND" once the
 * cancelled workflow has closed, "WORKER_SHUTDOWN", …) stops, as Redis mode says it: the Flotilla
 * worker cancels a workflow only for the task's cancel or its timeout, which the record shows —
 * CANCELLED with the cancel's reason, or TIMEOUT as the worker words it. Otherwise: NOT_FOUND (the
 * attempt timed out on the server, or its workflow closed) is STALE_ATTEMPT, as Redis mode stops a
 * run whose entry is no longer its own; a cancel from Temporal itself, or the Temporal worker
 * shutting down, is Temporal's reason in the same shape.
 */
export function abortReasonOf(temporalReason: string, record: AbortCause | undefined, now: number): AbortReason {
  if (record?.cancelRequestedAt !== undefined) return new AbortReason(ErrorCodes.CANCELLED, record.cancelReason ?? "cancelled by request");
  if (record?.timeoutMs !== undefined && record.startedAt !== undefined && now >= record.startedAt + record.timeoutMs) {
    return new AbortReason(ErrorCodes.TIMEOUT, `timed out after ${record.timeoutMs} ms`);
  }
  if (temporalReason === "NOT_FOUND")
    return new AbortReason(ErrorCodes.STALE_ATTEMPT, "Temporal no longer holds this activity attempt (it timed out, or its workflow closed)");
  if (temporalReason === "WORKER_SHUTDOWN") return new AbortReason(ErrorCodes.SHUTDOWN, "the Temporal worker shut down before the activity finished");
  return new AbortReason(ErrorCodes.CANCELLED, `the activity was cancelled (${temporalReason})`);
}
