/**
 * The defaults every package and app of Flotilla shares, in one place: the worker library, the
 * health records, the worker app's flags, the agent's tool loop and the Temporal workflow all read
 * them from here, so no default is written twice.
 */
export const DEFAULTS = {
  /** Where Redis is when neither an option nor REDIS_URL says. */
  redisUrl: "redis://127.0.0.1:6379",
  /** Key prefix shared by clients and workers. */
  prefix: "flotilla",
  /** The queue a task goes to, and a worker serves, when none is named. */
  queue: "default",
  /** Tasks a worker runs at once. */
  concurrency: 4,
  /** A claimed task is leased to its worker for this long; renewed every third of it. */
  leaseMs: 30_000,
  /** A worker's heartbeat record lives this long; beats come every third of it. */
  heartbeatTtlMs: 15_000,
  /** How long one blocking claim waits for work. */
  blockMs: 5_000,
  /** How often a worker looks for delayed tasks that fell due. */
  promoteIntervalMs: 1_000,
  /** In every this many claim rounds, lower lanes pick first once each (0: strict priority). */
  fairnessEvery: 10,
  /** How long `stop()` lets running tasks finish. */
  drainTimeoutMs: 30_000,
  /** A worker's `start()` gives Redis this long to answer. */
  workerConnectTimeoutMs: 10_000,
  /** A client gives Redis this long to answer before a ConnectionError. */
  clientConnectTimeoutMs: 5_000,
  /** How often a worker reads its queue-depth and live-worker gauges. */
  gaugeIntervalMs: 5_000,
  /** Model turns at most per agent in one run. */
  maxSteps: 8,
  /** Largest accepted submit payload (agent + input) as JSON. */
  maxPayloadBytes: 1_048_576,
  /**
   * Largest task a worker reads (payload and metadata, as stored): a bigger one, written straight
   * into Redis, fails PAYLOAD_TOO_LARGE and is dead-lettered without being parsed. Above the client's
   * submit limit, with room for a graph node's payload (its inputs and the run state it carries).
   */
  workerMaxPayloadBytes: 8_388_608,
  /** Largest output a graph node may return (as JSON): its run keeps every node's output. */
  maxNodeOutputBytes: 1_048_576,
  /**
   * Deepest nesting of objects and arrays accepted in user JSON (a task's agent, input and metadata),
   * at submit and when a worker reads a task. Far beyond what real inputs and JSON Schemas use (a
   * few dozen levels at most), far below what recursive JSON code survives (a few thousand).
   */
  maxJsonDepth: 128,
} as const;

/** How many finished tasks of a kind a queue keeps, and for how long. */
export interface KeepRule {
  /**
   * The latest this many are kept (with their event streams); older ones are deleted as new ones
   * end, a few per settle. 0: no limit by count, only by age.
   */
  count: number;
  /** Each is deleted this long after it ended. */
  ageMs: number;
}

/** How long Flotilla keeps what it writes. A waiting task is kept until it runs; everything else expires or is trimmed. */
export interface RetentionOptions {
  /**
   * Task records expire this long after they end: the age of `keepCompleted` unless that sets its
   * own. @default 86_400_000 (24 h)
   */
  recordTtlMs?: number;
  /**
   * Tasks that ended COMPLETED or CANCELLED: at most `count` kept per queue (0: no limit), each for
   * `ageMs`. @default { count: 0, ageMs: recordTtlMs }
   */
  keepCompleted?: Partial<KeepRule>;
  /**
   * Tasks that ended FAILED (dead-lettered ones too): kept longer by default, to look into.
   * @default { count: 0, ageMs: 604_800_000 (7 days) }
   */
  keepFailed?: Partial<KeepRule>;
  /**
   * A finished task's event stream expires this long after the task ends (its record may stay
   * longer: `recordTtlMs`). @default 3_600_000 (1 h)
   */
  eventTtlMs?: number;
  /**
   * While the task runs, its event stream expires this long after its last event: a run silent for
   * longer (a long tool call) would lose its replay. @default 86_400_000 (24 h)
   */
  runningEventTtlMs?: number;
  /**
   * `"keep"`: a finished task's events stay replayable for `eventTtlMs`. `"until-end"`: its event
   * stream is deleted the moment it ends (its record, status events and result stay), for fleets that
   * never replay a finished task's tokens. @default "keep"
   */
  events?: "keep" | "until-end";
  /** A task's event stream keeps about this many of its latest events (trimmed in whole published batches). @default 10_000 */
  eventMaxLen?: number;
  /** Each queue's task index keeps at most about this many ids (oldest trimmed first). @default 1_000_000 */
  indexMaxSize?: number;
  /** Each queue's dead-letter stream keeps about this many entries (approximate trim). @default 100_000 */
  deadLetterMaxLen?: number;
}

export type Retention = Required<Omit<RetentionOptions, "keepCompleted" | "keepFailed">> & { keepCompleted: KeepRule; keepFailed: KeepRule };

export const DEFAULT_RETENTION: Retention = {
  recordTtlMs: 86_400_000,
  keepCompleted: { count: 0, ageMs: 86_400_000 },
  keepFailed: { count: 0, ageMs: 604_800_000 },
  eventTtlMs: 3_600_000,
  runningEventTtlMs: 86_400_000,
  events: "keep",
  eventMaxLen: 10_000,
  indexMaxSize: 1_000_000,
  deadLetterMaxLen: 100_000,
};

/**
 * The one function that applies the retention defaults. `base`: what unset options fall back to (a
 * worker's retention, for one queue's own). `recordTtlMs` sets the age of `keepCompleted` unless that
 * sets its own.
 */
export function resolveRetention(options: RetentionOptions | undefined, base: Retention = DEFAULT_RETENTION): Retention {
  const out: Retention = { ...base };
  for (const [k, v] of Object.entries(options ?? {})) {
    if (v !== undefined && k !== "keepCompleted" && k !== "keepFailed") (out as Record<string, unknown>)[k] = v;
  }
  out.keepCompleted = {
    ...base.keepCompleted,
    ...(options?.recordTtlMs !== undefined && { ageMs: options.recordTtlMs }),
    ...definedOf(options?.keepCompleted),
  };
  out.keepFailed = { ...base.keepFailed, ...definedOf(options?.keepFailed) };
  return out;
}

const definedOf = (rule: Partial<KeepRule> | undefined): Partial<KeepRule> =>
  Object.fromEntries(Object.entries(rule ?? {}).filter(([, v]) => v !== undefined)) as Partial<KeepRule>;
