import { FlotillaError } from "@flotilla/core";

/**
 * Why a run was aborted, as its signal's reason (what a tool's `signal.reason` is): code CANCELLED
 * (message: the cancel's reason), TIMEOUT, SHUTDOWN or STALE_ATTEMPT. The outcome is decided by it.
 * Exported so that executors running tools elsewhere (Temporal mode) abort them with the same reason.
 */
export class AbortReason extends FlotillaError {}
