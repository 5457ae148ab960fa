export * from "./defaults.ts";
export * from "./errors.ts";
export * from "./ids.ts";
export * from "./keys.ts";
export * from "./lua.ts";
export * from "./redis.ts";
export * from "./schemas.ts";
export * from "./subscriber-hub.ts";
