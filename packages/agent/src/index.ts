export * from "./agent.ts";
export * from "./provider.ts";
export * from "./run.ts";
export * from "./scripted.ts";
export * from "./tool.ts";
