import { randomBytes } from "node:crypto";

let last = 0;
let counter = 0;
// Random bytes are drawn in blocks: one randomBytes call per id costs more than the rest of a submit.
let pool = Buffer.alloc(0);
let poolAt = 0;

function random8(): string {
  if (poolAt + 4 > pool.length) {
    pool = randomBytes(4096);
    poolAt = 0;
  }
  poolAt += 4;
  return pool.toString("hex", poolAt - 4, poolAt);
}

/** A unique id that sorts by creation time: 10 chars of time, 4 of counter, 8 of randomness. */
export function newId(): string {
  const now = Date.now();
  counter = now === last ? counter + 1 : 0;
  last = now;
  return now.toString(36).padStart(10, "0") + counter.toString(36).padStart(4, "0") + random8();
}

/** JSON.parse that returns `fallback` instead of throwing. */
export function parseJsonOr(text: string | null | undefined, fallback: unknown): unknown {
  if (text === null || text === undefined) return fallback;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}
