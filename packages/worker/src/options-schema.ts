import type { Agent, LanguageModel, OpenAICompatibleEndpoint, ProviderFactory, Swarm, Tool } from "@flotilla/agent";
import { BackoffSchema, DEFAULTS, KeyPrefixSchema, type Logger, QueueNameSchema, RedisUrlSchema, type RunnableSpec } from "@flotilla/core";
import type { RedisConnection } from "@flotilla/core/redis";
import type { MemoryStore } from "@flotilla/memory";
import type { FlotillaMetrics } from "@flotilla/metrics";
import { RateLimitOptionsSchema } from "@flotilla/ratelimit";
import { z } from "zod";
import type { Executor, NodeExecutor } from "./executor.ts";
import type { SubscriptionRunner } from "./subscriptions.ts";

// The zod side of WorkerOptions (options.ts has the type and applies the defaults). Plain JavaScript
// callers get a ValidationError naming the field at `new Worker()`, not a task that fails later for
// a reason that hides the cause (an array of tools read as a record, `http://` read as a Redis host).

const isFunction = (v: unknown) => typeof v === "function";
const isObject = (v: unknown): v is object => typeof v === "object" && v !== null;
const fn = z.custom<(...args: never[]) => unknown>(isFunction, "must be a function");
const functions = (...names: string[]) => z.object(Object.fromEntries(names.map((n) => [n, fn])));

/**
 * Checks a value against `shape` but hands back the value itself: tools, stores and executors may be
 * class instances, whose prototype and `this` a parsed copy would lose.
 */
function shaped<T>(shape: z.ZodType): z.ZodType<T> {
  return z.custom<T>().superRefine((value, ctx) => {
    const parsed = shape.safeParse(value);
    if (parsed.success) return;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path, input: value });
  });
}

/** Parses with the schema `pick` chooses for the value: a union would report only "invalid input", not the field at fault. */
function byKind<T>(pick: (value: unknown) => z.ZodType<T>): z.ZodType<T> {
  return z.unknown().transform((value, ctx) => {
    const parsed = pick(value).safeParse(value);
    if (parsed.success) return parsed.data;
    for (const issue of parsed.error.issues) ctx.addIssue({ code: "custom", message: issue.message, path: issue.path, input: value });
    return z.NEVER;
  }) as unknown as z.ZodType<T>;
}

const ToolSchema = shaped<Tool>(
  z.object({
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1 to 64 letters, digits, _ or -"),
    description: z.string(),
    inputSchema: z.custom((v) => isObject(v) && isFunction((v as { safeParse?: unknown }).safeParse), "must be a zod schema"),
    execute: fn,
  }),
);

type Tools = ReadonlyMap<string, Tool> | Readonly<Record<string, Tool>>;

/** An array of tools becomes a Map by tool name (a name given twice is refused). */
const ToolListSchema = z.array(ToolSchema).transform((tools, ctx): Tools => {
  const byName = new Map<string, Tool>();
  tools.forEach((tool, i) => {
    if (byName.has(tool.name)) ctx.addIssue({ code: "custom", message: `a second tool named "${tool.name}"`, path: [i, "name"], input: tools });
    byName.set(tool.name, tool);
  });
  return byName;
});
/** Tools as an array, or by name in a Map or a record (kept by its keys, as agents name them). */
const ToolsSchema = byKind<Tools>((v) =>
  Array.isArray(v)
    ? ToolListSchema
    : v instanceof Map
      ? z.map(z.string(), ToolSchema)
      : isObject(v)
        ? z.record(z.string(), ToolSchema)
        : z.custom<Tools>(() => false, "must be an array of tools, or a Map or record of tools by name"),
);

const RedisSchema = byKind<RedisConnection>((v) =>
  typeof v === "string" ? RedisUrlSchema : z.custom<RedisConnection>(isObject, "must be a Redis URL, ioredis options or an ioredis client"),
);

/** The shortest lease a worker takes (it renews every third of it). */
const MIN_LEASE_MS = 300;
const positive = () => z.number().int("must be a positive integer").min(1, "must be a positive integer");

/** A keep rule: how many finished tasks of a kind a queue keeps (0: no limit), and for how long. */
const KeepRuleSchema = z
  .object({ count: z.number().int("must be an integer").min(0, "must be 0 (no limit) or more"), ageMs: positive() })
  .partial()
  .strict();

const RetentionSchema = z
  .object({
    recordTtlMs: positive(),
    keepCompleted: KeepRuleSchema,
    keepFailed: KeepRuleSchema,
    eventTtlMs: positive(),
    runningEventTtlMs: positive(),
    events: z.enum(["keep", "until-end"]),
    eventMaxLen: positive(),
    indexMaxSize: positive(),
    deadLetterMaxLen: positive(),
  })
  .partial()
  .strict();

/** What `new Worker(options)` accepts; unknown fields are refused (a misspelt option would be ignored silently). */
export const WorkerOptionsSchema = z
  .object({
    redis: RedisSchema,
    prefix: KeyPrefixSchema,
    queues: z.array(QueueNameSchema).min(1, "a worker needs at least one queue"),
    concurrency: positive(),
    agents: z.array(z.custom<Agent<unknown> | Swarm | RunnableSpec>(isObject, "must be an Agent, a Swarm or their JSON")),
    tools: ToolsSchema,
    providerFactory: z.custom<ProviderFactory>(isFunction, "must be a function"),
    openAICompatible: z.record(z.string(), shaped<OpenAICompatibleEndpoint>(z.looseObject({ baseURL: z.string().min(1) }))),
    model: z.custom<LanguageModel>(isObject, "must be an AI SDK LanguageModel"),
    memory: z.record(z.string(), shaped<MemoryStore>(functions("entries", "append", "clear"))),
    schedules: z.boolean(),
    rateLimits: z.array(RateLimitOptionsSchema).refine((l) => new Set(l.map((x) => x.name)).size === l.length, "rate limit names must be unique"),
    executor: shaped<Executor>(functions("execute")),
    graph: shaped<NodeExecutor>(functions("execute", "ended", "start", "stop")),
    bus: shaped<SubscriptionRunner>(functions("start", "stop")),
    heartbeatTtlMs: positive(),
    blockMs: positive(),
    leaseMs: z.number().min(MIN_LEASE_MS, `must be at least ${MIN_LEASE_MS}`),
    backoff: BackoffSchema,
    promoteIntervalMs: positive(),
    fairnessEvery: z.number().int("must be an integer").min(0, "must be 0 (strict priority) or an integer of at least 2"),
    workerId: z.string().min(1),
    buildId: z.string().min(1).max(200),
    connectTimeoutMs: positive(),
    retention: RetentionSchema,
    queueRetention: z.record(QueueNameSchema, RetentionSchema),
    defaultTimeoutMs: positive(),
    queueTimeouts: z.record(QueueNameSchema, positive()),
    logger: shaped<Logger>(functions("debug", "info", "warn", "error")),
    metrics: shaped<FlotillaMetrics>(functions("add", "record")),
    gaugeIntervalMs: positive(),
    maxJsonDepth: positive(),
    maxPayloadBytes: positive(),
    signingSecrets: z.array(z.string().min(16, "must be at least 16 characters")).min(1),
    selfFenceMarginMs: positive(),
  })
  .partial()
  .strict()
  .superRefine((o, ctx) => {
    if (o.selfFenceMarginMs === undefined) return;
    const leaseMs = o.leaseMs ?? DEFAULTS.leaseMs;
    // Below a twentieth it no longer covers the fence's own check interval and clock drift; from a
    // third on, one failed renewal (of the three a lease gets) would already stop runs.
    if (o.selfFenceMarginMs < leaseMs / 20 || o.selfFenceMarginMs >= leaseMs / 3) {
      ctx.addIssue({
        code: "custom",
        path: ["selfFenceMarginMs"],
        message: `must be at least a twentieth of leaseMs (${leaseMs}) and less than a third of it`,
        input: o.selfFenceMarginMs,
      });
    }
  });
