import { hostname } from "node:os";
import type { Agent, LanguageModel, OpenAICompatibleEndpoint, ProviderFactory, Swarm, Tool, ToolRegistry } from "@flotilla/agent";
import {
  type Backoff,
  type BackoffOptions,
  BackoffSchema,
  DEFAULTS,
  type Logger,
  newId,
  parseInput,
  type Retention,
  type RetentionOptions,
  type RunnableSpec,
  RunnableSpecSchema,
  resolveRetention,
  silentLogger,
} from "@flotilla/core";
import { type RedisConnection, redisFromEnv, resolvePrefix } from "@flotilla/core/redis";
import type { MemoryStore } from "@flotilla/memory";
import { defaultMetrics, type FlotillaMetrics } from "@flotilla/metrics";
import type { RateLimitOptions } from "@flotilla/ratelimit";
import type { Executor, NodeExecutor } from "./executor.ts";
import { WorkerOptionsSchema } from "./options-schema.ts";
import type { SubscriptionRunner } from "./subscriptions.ts";

export interface WorkerOptions {
  /** Redis URL, ioredis options or client, a Redis Cluster (`{ cluster: ["host:port", …] }` or an ioredis Cluster). @default the cluster REDIS_CLUSTER_NODES names, else REDIS_URL, else "redis://127.0.0.1:6379" */
  redis?: RedisConnection;
  /** Key prefix shared with the clients. @default FLOTILLA_PREFIX, else "flotilla" */
  prefix?: string;
  /** Queues to claim from. @default ["default"] */
  queues?: string[];
  /** Tasks run at once in this process. @default 4 */
  concurrency?: number;
  /**
   * When given, the only agents this worker runs, matched by name; a task runs the worker's
   * definition, so a payload cannot change an agent's model, instructions or tools.
   * A task naming any other agent fails with UNKNOWN_AGENT.
   * @default undefined: any agent a task carries
   */
  agents?: ReadonlyArray<Agent<unknown> | Swarm | RunnableSpec>;
  /**
   * The tools tasks may use, by name: an array of tools (by each tool's `name`; a name twice is a
   * ValidationError), or a Map or record by name. A task can use only these. @default none
   */
  tools?: ToolRegistry | readonly Tool[];
  /**
   * Makes the model for a `provider:model` name; asked first. Then: the built-in `scripted` model,
   * `openAICompatible` endpoints, and installed AI SDK provider packages with their API keys in
   * the environment (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, …). Anything else fails the task with
   * UNKNOWN_PROVIDER naming the model.
   * @default undefined
   */
  providerFactory?: ProviderFactory;
  /** OpenAI-compatible endpoints (vLLM, Ollama, …) by provider name: `{ ollama: { baseURL } }`. @default none */
  openAICompatible?: Record<string, OpenAICompatibleEndpoint>;
  /** One model for every agent, whatever its `model` says (tests, proxies). @default undefined */
  model?: LanguageModel;
  /** Memory stores by name, for tasks whose metadata names one; `redis` (this worker's connection) is built in. @default { redis } */
  memory?: Record<string, MemoryStore>;
  /**
   * Fleet-wide rate limits agents (`rateLimit`) and tools draw from, shared through Redis with every
   * worker that configures the same name (configure it the same on each):
   * `[{ name: "openai", requestsPerMinute: 500, tokensPerMinute: 200_000 }]`. @default none
   */
  rateLimits?: RateLimitOptions[];
  /**
   * Fires the fleet's due schedules (`client.schedules`, @flotilla/schedules): every worker that does
   * takes part, and each tick is fired once, by whichever takes it first. @default true
   */
  schedules?: boolean;
  /** Runs the agents. @default agentExecutor(): in this process */
  executor?: Executor;
  /**
   * Runs graph node tasks (`graphWorker({ nodes, agents })` of @flotilla/graph): the worker also
   * claims from its node types' queues and lists them in its heartbeat. @default undefined: no graph nodes
   */
  graph?: NodeExecutor;
  /**
   * Serves event-bus subscriptions (`busWorker({ subscriptions })` of @flotilla/bus) beside the
   * worker's tasks, listed in its heartbeat. @default undefined: no subscriptions
   */
  bus?: SubscriptionRunner;
  /** Heartbeat record TTL; beats come every third of it. @default 15_000 */
  heartbeatTtlMs?: number;
  /** How long one claim call blocks waiting for work. @default 5_000 */
  blockMs?: number;
  /**
   * A claimed task is leased to this worker for this long. Leases of all running tasks are renewed
   * together every third of it, so a long run is never taken from a live worker; a task whose lease
   * lapsed (worker killed, frozen, cut off) is reclaimed by another worker. At least 300.
   * @default 30_000
   */
  leaseMs?: number;
  /**
   * Self-fencing: a run whose lease this worker could not renew (Redis unreachable: a partition, an
   * outage) is aborted this long before the lease could lapse, with reason LEASE_EXPIRED, so its
   * tools stop before another worker may take the task over. Counted on the worker's monotonic
   * clock from when the last renewal that worked was sent. It covers a difference in clock rate
   * between this machine and Redis's (up to 1 % of the lease), the fence's check interval (a
   * thirtieth of the lease) and the time a tool takes to heed its AbortSignal. At least a twentieth
   * of `leaseMs`, less than a third (so one failed renewal stops nothing).
   * @default a tenth of leaseMs
   */
  selfFenceMarginMs?: number;
  /** Wait between retries for tasks that do not set their own. @default { delayMs: 1000, maxDelayMs: 60000, jitter: 0.5 } */
  backoff?: BackoffOptions;
  /** How often to look for delayed tasks that fell due (any live worker moves them into the queue). @default 1_000 */
  promoteIntervalMs?: number;
  /**
   * Fairness between priorities: in every this many claim rounds, one round lets the low lane pick
   * first and one lets the normal lane pick first; all other rounds go high → normal → low. 0 turns
   * fairness off: strict priority, where a steady flow of high tasks can hold normal and low back
   * for as long as it lasts. Otherwise at least 2.
   * @default 10
   */
  fairnessEvery?: number;
  /** @default `${hostname}-${pid}-${random}` */
  workerId?: string;
  /**
   * Your application's build (a git sha, a release tag), shown beside the worker in `flotilla
   * workers`, the gateway and the dashboard, so a fleet mid-deploy shows which workers run what.
   * @default undefined (only the @flotilla/worker version is shown)
   */
  buildId?: string;
  /** `start()` fails with a ConnectionError if Redis does not answer within this. @default 10_000 */
  connectTimeoutMs?: number;
  /** How long what the worker writes is kept (records, events, dead letters). @default DEFAULT_RETENTION */
  retention?: RetentionOptions;
  /**
   * Retention of some queues' tasks, over `retention` (e.g. `{ reports: { keepCompleted: { count: 1000 } } }`).
   * @default {} (every queue as `retention`)
   */
  queueRetention?: Record<string, RetentionOptions>;
  /**
   * The timeout of a task that sets none (`timeoutMs` on submit), in ms: a model call that hangs
   * while its lease renews must not hold a slot forever. It times out as a task's own timeout does
   * (code TIMEOUT, retried if it has retries left). @default undefined: no limit
   */
  defaultTimeoutMs?: number;
  /**
   * Per-queue defaults over `defaultTimeoutMs` (e.g. `{ chat: 60_000, reports: 900_000 }`); a task's own
   * `timeoutMs` wins over both. @default {}
   */
  queueTimeouts?: Record<string, number>;
  /** @default silentLogger */
  logger?: Logger;
  /** Where task counts, durations, queue gauges and event figures go. @default defaultMetrics() */
  metrics?: FlotillaMetrics;
  /**
   * Deepest nesting of objects and arrays accepted in a task's agent, input and metadata when the
   * worker reads it: a task nested deeper (written straight into Redis, or by a client with a higher
   * limit) fails with code INVALID_PAYLOAD and is dead-lettered, never run. @default 128
   */
  maxJsonDepth?: number;
  /**
   * Largest task read (its payload and metadata as stored, in bytes): a bigger one (written straight
   * into Redis) fails with code PAYLOAD_TOO_LARGE and is dead-lettered without being parsed.
   * @default 8_388_608 (8 MiB: above the client's 1 MiB submit limit, with room for graph node payloads)
   */
  maxPayloadBytes?: number;
  /** How often the queue-depth and live-worker gauges are read from Redis. @default 5_000 */
  gaugeIntervalMs?: number;
  /**
   * Signed tasks: run only tasks signed (HMAC-SHA256) with one of these secrets; a task unsigned or
   * changed since it was signed fails with code BAD_SIGNATURE and is dead-lettered, never run. The
   * first also signs the tasks this worker creates (graph nodes, schedules, bus agents); list a
   * secret being rotated out after it. Give clients the same first secret (`signingSecret`).
   * @default undefined: no signature is made or checked
   */
  signingSecrets?: string[];
}

export interface StopOptions {
  /** Running tasks get this long to finish. @default 30_000 */
  drainTimeoutMs?: number;
  /**
   * What happens to tasks still running at the deadline: `release` hands each back to its queue at
   * once (RETRYING, code SHUTDOWN, no retry used up) for another worker to run; `cancel` ends them
   * CANCELLED (code SHUTDOWN). @default "release"
   */
  onDeadline?: "release" | "cancel";
}

/** WorkerOptions with every default applied and every value checked. */
export interface ResolvedWorkerOptions {
  redis: RedisConnection | undefined;
  prefix: string;
  queues: readonly string[];
  concurrency: number;
  /** The agents by name, when the worker runs only its own. */
  agents: ReadonlyMap<string, RunnableSpec> | undefined;
  executor: Executor | undefined;
  graph: NodeExecutor | undefined;
  bus: SubscriptionRunner | undefined;
  tools: ToolRegistry | undefined;
  providerFactory: ProviderFactory | undefined;
  openAICompatible: Record<string, OpenAICompatibleEndpoint> | undefined;
  model: LanguageModel | undefined;
  memory: Record<string, MemoryStore> | undefined;
  rateLimits: RateLimitOptions[];
  schedules: boolean;
  heartbeatTtlMs: number;
  blockMs: number;
  leaseMs: number;
  selfFenceMarginMs: number;
  backoff: Backoff;
  promoteIntervalMs: number;
  fairnessEvery: number;
  workerId: string;
  buildId: string | undefined;
  connectTimeoutMs: number;
  retention: Retention;
  queueRetention: Record<string, Retention>;
  defaultTimeoutMs: number | undefined;
  queueTimeouts: Record<string, number>;
  logger: Logger;
  metrics: FlotillaMetrics;
  gaugeIntervalMs: number;
  maxJsonDepth: number;
  maxPayloadBytes: number;
  signingSecrets: string[] | undefined;
}

/** Worker options given by mistake, and where what they hold belongs (the error says so instead of "unknown key"). */
const MISPLACED_WORKER_OPTIONS: Readonly<Record<string, string>> = {
  tool: "tools are given as `tools` (a list, or a record by name)",
  agent: "agents are given as `agents` (a list)",
  nodes: "graph node types are served through `graph: graphWorker({ nodes })` (@flotilla/graph)",
  subscriptions: "subscriptions are served through `bus: busWorker({ subscriptions })` (@flotilla/bus)",
  rateLimit: "fleet-wide rate limits are `rateLimits` (a list of { name, requestsPerMinute, tokensPerMinute })",
  lease: "the lease is `leaseMs`",
};

/** The one place the Worker's defaults are applied (from DEFAULTS, shared with health and the worker app). */
export function resolveWorkerOptions(options: WorkerOptions): ResolvedWorkerOptions {
  const o = parseInput(WorkerOptionsSchema, options, "worker options", MISPLACED_WORKER_OPTIONS);
  // Checked now, not at start(): REDIS_URL=http://… is a ValidationError from the constructor.
  if (o.redis === undefined) redisFromEnv();
  const fairnessEvery = o.fairnessEvery ?? DEFAULTS.fairnessEvery;
  const leaseMs = o.leaseMs ?? DEFAULTS.leaseMs;
  const retention = resolveRetention(o.retention);
  const agents = o.agents?.map((a) => parseInput(RunnableSpecSchema, "toJSON" in a ? a.toJSON() : a, "agent"));
  return {
    redis: o.redis,
    // An option given wins, else FLOTILLA_PREFIX, else the default: the rule of every entry point.
    prefix: resolvePrefix(o.prefix),
    // A worker given only graph nodes serves their queues alone.
    queues: [...new Set([...(o.queues ?? (o.graph ? [] : [DEFAULTS.queue])), ...(o.graph?.queues ?? [])])],
    concurrency: o.concurrency ?? DEFAULTS.concurrency,
    agents: agents && new Map(agents.map((spec) => [spec.name, spec])),
    executor: o.executor,
    graph: o.graph,
    bus: o.bus,
    tools: o.tools,
    providerFactory: o.providerFactory,
    openAICompatible: o.openAICompatible,
    model: o.model,
    memory: o.memory,
    rateLimits: o.rateLimits ?? [],
    schedules: o.schedules ?? true,
    heartbeatTtlMs: o.heartbeatTtlMs ?? DEFAULTS.heartbeatTtlMs,
    blockMs: o.blockMs ?? DEFAULTS.blockMs,
    leaseMs,
    selfFenceMarginMs: o.selfFenceMarginMs ?? Math.floor(leaseMs / 10),
    backoff: o.backoff ?? parseInput(BackoffSchema, {}, "backoff"),
    promoteIntervalMs: o.promoteIntervalMs ?? DEFAULTS.promoteIntervalMs,
    // 1 would let low and normal take turns first every round: the same as 2, said plainly.
    fairnessEvery: fairnessEvery === 1 ? 2 : fairnessEvery,
    workerId: o.workerId ?? defaultWorkerId(),
    buildId: o.buildId,
    connectTimeoutMs: o.connectTimeoutMs ?? DEFAULTS.workerConnectTimeoutMs,
    retention,
    queueRetention: Object.fromEntries(Object.entries(o.queueRetention ?? {}).map(([queue, r]) => [queue, resolveRetention(r, retention)])),
    defaultTimeoutMs: o.defaultTimeoutMs,
    queueTimeouts: o.queueTimeouts ?? {},
    logger: o.logger ?? silentLogger,
    metrics: o.metrics ?? defaultMetrics(),
    gaugeIntervalMs: o.gaugeIntervalMs ?? DEFAULTS.gaugeIntervalMs,
    maxJsonDepth: o.maxJsonDepth ?? DEFAULTS.maxJsonDepth,
    maxPayloadBytes: o.maxPayloadBytes ?? DEFAULTS.workerMaxPayloadBytes,
    signingSecrets: o.signingSecrets,
  };
}

/** The id a worker takes when given none: `<hostname>-<pid>-<random>`, unique on the machine and over time. */
export function defaultWorkerId(): string {
  return `${hostname()}-${process.pid}-${newId().slice(-6)}`;
}
