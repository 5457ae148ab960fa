// No Node built-ins here: this module is part of core's pure entry, which Temporal workflow code
// may import. Random bytes come from Web Crypto, present in Node and browsers alike.

let last = 0;
let counter = 0;
// Random bytes are drawn in blocks: one call per id costs more than the rest of a submit.
const pool = new Uint8Array(4096);
let poolAt = pool.length;
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

function random8(): string {
  if (poolAt + 4 > pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolAt = 0;
  }
  const at = poolAt;
  poolAt += 4;
  return HEX[pool[at]!]! + HEX[pool[at + 1]!]! + HEX[pool[at + 2]!]! + HEX[pool[at + 3]!]!;
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

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
