export * from "./activities.ts";
export * from "./executor.ts";
export * from "./temporal-worker.ts";
export * from "./types.ts";
