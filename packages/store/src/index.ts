export { decodeCursor, encodeCursor, type Position } from "./cursor.ts";
export * from "./task-store.ts";
