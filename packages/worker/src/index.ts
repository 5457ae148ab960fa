export * from "./agent-executor.ts";
export * from "./executor.ts";
export * from "./logger.ts";
export * from "./worker.ts";
