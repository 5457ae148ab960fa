export * from "./alerts.ts";
export * from "./fleet-figures.ts";
export * from "./metrics.ts";
export * from "./tracing.ts";
