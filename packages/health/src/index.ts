export * from "./fleet.ts";
export * from "./heartbeat.ts";
export * from "./schema.ts";
