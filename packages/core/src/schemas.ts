import { z } from "zod";
import { exponentialDelay } from "./backoff.ts";
import { CorruptRecordError, ValidationError, type ValidationIssue } from "./errors.ts";

export const TaskStatusSchema = z.enum(["PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "RETRYING", "WAITING"]);
export type TaskStatus = z.infer<typeof TaskStatusSchema>;
export const TERMINAL_STATUSES: ReadonlySet<TaskStatus> = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
export const isTerminal = (status: TaskStatus): boolean => TERMINAL_STATUSES.has(status);

// Ids end up inside Redis keys and hash tags: no braces, no spaces.
export const SAFE_ID = /^[A-Za-z0-9_.:-]+$/;
export const QueueNameSchema = z.string().min(1).max(64).regex(SAFE_ID, "use letters, digits and _ . : - only");
/** A key prefix: what `createKeys` accepts. */
export const KeyPrefixSchema = z
  .string()
  .min(1, "must not be empty")
  .regex(/^[^{}\s]+$/, "use no braces or spaces");
/**
 * A Redis URL as ioredis reads it: `redis://` or `rediss://`, a unix socket path, or `host:port`.
 * Another scheme (`http://…`) is refused here: ioredis would take its host apart and fail much later.
 */
export const RedisUrlSchema = z
  .string()
  .min(1, "must not be empty")
  .refine((url) => !/^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^rediss?:\/\//i.test(url), {
    message: "expected a redis:// or rediss:// URL, a unix socket path or host:port",
  });
/** A task's name within its queue. */
export const TaskNameSchema = z.string().min(1).max(128).regex(SAFE_ID, "use letters, digits and _ . : - only");
/** A task's id: `<queue>/<name>`. The queue part keeps a task's keys in its queue's cluster slot. */
export const TaskIdSchema = z
  .string()
  .max(193)
  .regex(/^[A-Za-z0-9_.:-]{1,64}\/[A-Za-z0-9_.:-]{1,128}$/, "a task id is <queue>/<name>: letters, digits and _ . : - on each side");
/** What `taskId` accepts at submit: a name, or a whole id whose queue part is the submit's queue. */
export const TaskIdOptionSchema = z
  .string()
  .max(193)
  .regex(/^([A-Za-z0-9_.:-]{1,64}\/)?[A-Za-z0-9_.:-]{1,128}$/, "use letters, digits and _ . : - only (optionally <queue>/<name>)");

export const JsonValueSchema = z.json();

/** A task's priority lane: workers take high before normal before low (see the broker README for fairness). */
export const PrioritySchema = z.enum(["high", "normal", "low"]);
export type Priority = z.infer<typeof PrioritySchema>;
export const PRIORITIES: readonly Priority[] = ["high", "normal", "low"];

/**
 * The lane an integer priority (as the graph systems Flotilla learns from give them: higher is more
 * urgent, 0 is normal) falls in: above 0 high, 0 normal, below 0 low. Within a lane tasks start in
 * the order they were submitted: 10 and 5 are both high.
 */
export function laneOfPriority(priority: number): Priority {
  return priority > 0 ? "high" : priority < 0 ? "low" : "normal";
}

/** What `priority` accepts at submit: a lane, or an integer mapped to one (see laneOfPriority). */
export const PriorityOptionSchema = z.union([PrioritySchema, z.number().int().min(-1_000_000).max(1_000_000).transform(laneOfPriority)]);
export type JsonValue = z.infer<typeof JsonValueSchema>;

/** The serialised form of an agent (`agent.toJSON()`), the only agent shape that crosses Redis. */
export const AgentSpecSchema = z
  .object({
    kind: z.literal("agent").default("agent"),
    name: z.string().min(1).max(128),
    model: z
      .string()
      .max(256)
      .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*:.+$/, 'expected "provider:model", e.g. "scripted:echo"'),
    instructions: z.string().max(200_000).default(""),
    tools: z.array(z.string().min(1).max(128)).max(128).default([]),
    options: z.record(z.string(), JsonValueSchema).default({}),
    /** The final answer must be JSON matching this JSON Schema (the serialised form of a zod schema). */
    outputSchema: z.record(z.string(), JsonValueSchema).optional(),
    /** The fleet-wide rate limit its model turns draw from (configured on the workers by this name). */
    rateLimit: z.string().min(1).max(128).regex(SAFE_ID, "use letters, digits and _ . : - only").optional(),
  })
  .strict();
export type AgentSpec = z.infer<typeof AgentSpecSchema>;
export type AgentSpecInput = z.input<typeof AgentSpecSchema>;

/** Several agents run as one task: handing control to each other, or one after another. */
export const SwarmSpecSchema = z
  .object({
    kind: z.literal("swarm"),
    name: z.string().min(1).max(128),
    agents: z
      .array(AgentSpecSchema)
      .min(1)
      .max(32)
      .refine((agents) => new Set(agents.map((a) => a.name)).size === agents.length, "agent names must be unique"),
    /** `handoff`: the entry agent runs and may transfer control with the built-in handoff tool;
     * `pipeline`: every agent runs in order, each given the previous one's answer. */
    mode: z.enum(["handoff", "pipeline"]).default("handoff"),
    /** The agent that starts (handoff mode). @default the first */
    entry: z.string().optional(),
    /** Handoffs at most in one run. @default 8 */
    maxHandoffs: z.number().int().min(0).max(100).default(8),
  })
  .strict()
  .refine((s) => s.entry === undefined || s.agents.some((a) => a.name === s.entry), { message: "entry must name one of the agents", path: ["entry"] });
export type SwarmSpec = z.infer<typeof SwarmSpecSchema>;
export type SwarmSpecInput = z.input<typeof SwarmSpecSchema>;

/** What a task runs: one agent or a swarm. */
export const RunnableSpecSchema = z.discriminatedUnion("kind", [AgentSpecSchema, SwarmSpecSchema]);
export type RunnableSpec = AgentSpec | SwarmSpec;

/** One message of a conversation, as memory stores keep it and runs replay it. */
export const MessageSchema = z.discriminatedUnion("role", [
  z.object({ role: z.literal("user"), content: z.string() }),
  z.object({
    role: z.literal("assistant"),
    content: z.string(),
    toolCalls: z.array(z.object({ toolCallId: z.string(), name: z.string(), args: JsonValueSchema })).optional(),
    /** Which agent of a swarm said it. */
    agent: z.string().optional(),
  }),
  z.object({ role: z.literal("tool"), toolCallId: z.string(), name: z.string(), content: JsonValueSchema, isError: z.boolean() }),
]);
export type Message = z.infer<typeof MessageSchema>;

/** Anything `distributed()` can run: it serialises itself. */
export interface Serializable {
  toJSON(): unknown;
}

/** How long to wait before each retry: exponential from `delayMs`, capped, with jitter. */
export const BackoffSchema = z
  .object({
    /** Delay before the first retry; doubles for each one after. @default 1_000 */
    delayMs: z.number().int().min(0).max(86_400_000).default(1000),
    /** No retry waits longer than this. @default 60_000 */
    maxDelayMs: z
      .number()
      .int()
      .min(0)
      .max(7 * 86_400_000)
      .default(60_000),
    /** Up to this fraction of each delay is taken off at random, so retries spread out. @default 0.5 */
    jitter: z.number().min(0).max(1).default(0.5),
  })
  .strict();
export type Backoff = z.output<typeof BackoffSchema>;
export type BackoffOptions = z.input<typeof BackoffSchema>;
export const DEFAULT_BACKOFF: Backoff = { delayMs: 1000, maxDelayMs: 60_000, jitter: 0.5 };

/** The wait before retry number `retries + 1` of a task: `exponentialDelay` with the task's backoff. */
export function backoffDelay(backoff: Backoff, retries: number, random: number = Math.random()): number {
  return exponentialDelay({ baseMs: backoff.delayMs, maxMs: backoff.maxDelayMs, jitter: backoff.jitter }, retries, random);
}

/** A task's (or graph node's) time limit per attempt: at most a week. */
export const TimeoutMsSchema = z
  .number()
  .int()
  .positive()
  .max(7 * 24 * 3600_000);

/** An idempotency key (of a task's submit or a graph run's start). */
export const IdempotencyKeySchema = z.string().min(1).max(512);
/** How long an idempotency key holds: at most 30 days. @default 86_400_000 (24 h) */
export const IdempotencyWindowSchema = z
  .number()
  .int()
  .positive()
  .max(30 * 86_400_000)
  .default(86_400_000);

export const SubmitOptionsSchema = z
  .object({
    queue: QueueNameSchema.default("default"),
    timeoutMs: TimeoutMsSchema.optional(),
    maxRetries: z.number().int().min(0).max(100).default(0),
    /** Attempts started at most, counting crash reclaims. @default maxRetries + 3 */
    maxDeliveries: z.number().int().min(1).max(1000).optional(),
    /** A lane, or an integer (above 0 high, 0 normal, below 0 low). @default "normal" */
    priority: PriorityOptionSchema.default("normal"),
    /** Wait between retries. @default the worker's backoff */
    backoff: BackoffSchema.optional(),
    /** Start no sooner than this many ms from now. */
    delayMs: z
      .number()
      .int()
      .min(0)
      .max(365 * 86_400_000)
      .optional(),
    /** Start no sooner than this time (a Date or ms since the epoch). */
    runAt: z.union([z.date().transform((d) => d.getTime()), z.number().int().min(0)]).optional(),
    metadata: z.record(z.string(), JsonValueSchema).default({}),
    detailed: z.boolean().default(false),
    /** The task's name within its queue (or its whole `<queue>/<name>` id). @default a new time-ordered id */
    taskId: TaskIdOptionSchema.optional(),
    /** A second submit with the same key within its window returns the first task's handle. */
    idempotencyKey: IdempotencyKeySchema.optional(),
    /** How long an idempotency key holds. @default 86_400_000 (24 h) */
    idempotencyWindowMs: IdempotencyWindowSchema,
    /**
     * At most `concurrencyLimit` of the queue's tasks with this key (e.g. a tenant id) run at once,
     * across the whole fleet; the others wait parked, holding no worker slot. @default none
     */
    concurrencyKey: z.string().min(1).max(128).regex(SAFE_ID, "use letters, digits and _ . : - only").optional(),
    /** How many tasks of `concurrencyKey` may run at once (the limit a task carries when it starts). @default 1 */
    concurrencyLimit: z.number().int().min(1).max(100_000).optional(),
  })
  .strict()
  .refine((o) => o.delayMs === undefined || o.runAt === undefined, { message: "give delayMs or runAt, not both", path: ["runAt"] })
  .refine((o) => o.concurrencyLimit === undefined || o.concurrencyKey !== undefined, {
    message: "concurrencyLimit needs a concurrencyKey",
    path: ["concurrencyLimit"],
  });
export type SubmitOptions = z.input<typeof SubmitOptionsSchema>;
export type ResolvedSubmitOptions = z.output<typeof SubmitOptionsSchema>;

/** What the queue carries for an agent's task: the agent and its input. */
export const AgentPayloadSchema = z.object({ agent: RunnableSpecSchema, input: JsonValueSchema }).strict();
export type AgentPayload = z.infer<typeof AgentPayloadSchema>;

/**
 * What the queue carries for a graph node's task (@flotilla/graph builds it and reads `node` in
 * full): which node of which run, its resolved inputs and the run state it sees.
 */
export const NodePayloadSchema = z
  .object({
    node: z.looseObject({ run: z.string().min(1), id: z.string().min(1), type: z.string().min(1) }),
    input: JsonValueSchema,
    state: JsonValueSchema.optional(),
  })
  .strict();
export type NodePayload = z.infer<typeof NodePayloadSchema>;

/** What the queue carries for each task: an agent and its input, or a graph node. */
export const TaskPayloadSchema = z.union([AgentPayloadSchema, NodePayloadSchema]);
export type TaskPayload = z.infer<typeof TaskPayloadSchema>;

export const TaskErrorSchema = z.object({ message: z.string(), code: z.string() });

/** Tokens a model call (or a whole run) used. */
export const TokenUsageSchema = z.object({
  inputTokens: z.number().int().min(0),
  outputTokens: z.number().int().min(0),
  totalTokens: z.number().int().min(0),
});
export type TokenUsage = z.infer<typeof TokenUsageSchema>;

export function issuesOf(error: z.ZodError, misplaced: Readonly<Record<string, string>> = {}): ValidationIssue[] {
  return error.issues.flatMap((i) =>
    // An unknown key is named in the path, one issue each, with where it belongs when it is a usual mistake.
    i.code === "unrecognized_keys"
      ? i.keys.map((key) => ({ path: [...i.path, key].map(String).join("."), message: misplaced[key] ?? "unknown key" }))
      : [{ path: i.path.map(String).join("."), message: i.message }],
  );
}

/**
 * Parses input at a public boundary; a failure is a ValidationError naming the field. `misplaced`:
 * keys users put here by mistake, with where they belong (the message for that unknown key).
 */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, what: string, misplaced?: Readonly<Record<string, string>>): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError(what, issuesOf(parsed.error, misplaced));
  return parsed.data;
}

/** Parses data read back from Redis; a failure is a CorruptRecordError. */
export function parseStored<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = issuesOf(parsed.error)[0];
    throw new CorruptRecordError(what, issue ? `${issue.path || "(root)"}: ${issue.message}` : "invalid");
  }
  return parsed.data;
}
