import { FlotillaError } from "@flotilla/core";

/** Why a run was aborted, as its signal's reason: the outcome is decided by what happened. */
export class AbortReason extends FlotillaError {}
