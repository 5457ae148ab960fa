export * from "./postgres-store.ts";
export * from "./redis-store.ts";
export * from "./sqlite-store.ts";
export * from "./store.ts";
export * from "./stores.ts";
