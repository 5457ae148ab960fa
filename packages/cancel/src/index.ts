export { CancelListener, type CancelHandler, type CancelListenerOptions } from "./cancel-listener.ts";
export { type CancelOutcome, requestCancel } from "./request-cancel.ts";
