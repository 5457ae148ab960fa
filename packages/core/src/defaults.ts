/** How long Flotilla keeps what it writes. A waiting task is kept until it runs; everything else expires or is trimmed. */
export interface RetentionOptions {
  /** Task records expire this long after they end. @default 86_400_000 (24 h) */
  recordTtlMs?: number;
  /** A task's event stream expires this long after its last event. @default 3_600_000 (1 h) */
  eventTtlMs?: number;
  /** A task's event stream keeps about this many of its latest events (trimmed in whole published batches). @default 10_000 */
  eventMaxLen?: number;
  /** Each queue's task index keeps at most about this many ids (oldest trimmed first). @default 1_000_000 */
  indexMaxSize?: number;
}

export type Retention = Required<RetentionOptions>;

export const DEFAULT_RETENTION: Retention = {
  recordTtlMs: 86_400_000,
  eventTtlMs: 3_600_000,
  eventMaxLen: 10_000,
  indexMaxSize: 1_000_000,
};

export function resolveRetention(options: RetentionOptions | undefined): Retention {
  const out = { ...DEFAULT_RETENTION };
  for (const [k, v] of Object.entries(options ?? {})) {
    if (v !== undefined) out[k as keyof Retention] = v;
  }
  return out;
}

/** A queue's dead-letter stream keeps about this many entries. */
export const DEAD_LETTER_MAX_LEN = 100_000;
