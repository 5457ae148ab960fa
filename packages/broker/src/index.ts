export * from "./broker.ts";
export * from "./entry.ts";
