export { type CancelHandler, CancelListener, type CancelListenerOptions } from "./cancel-listener.ts";
export { type CancelOutcome, requestCancel } from "./request-cancel.ts";
