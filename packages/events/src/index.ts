export * from "./event-stream.ts";
export * from "./publisher.ts";
export * from "./schema.ts";
export * from "./status-feed.ts";
