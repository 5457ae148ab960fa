export * from "./cancel-listener.ts";
export * from "./request-cancel.ts";
