import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { Agent, AgentConfig, OpenAICompatibleEndpoint, ProviderFactory, Swarm, Tool } from "@flotilla/agent";
import { DEFAULTS, KeyPrefixSchema, parseInput, QueueNameSchema, type RunnableSpec, ValidationError } from "@flotilla/core";
import { ENV, readEnv } from "@flotilla/core/redis";
import type { MemoryStore } from "@flotilla/memory";
import type { RateLimitOptions } from "@flotilla/ratelimit";
import type { NodeExecutor, SubscriptionRunner } from "@flotilla/worker";
import { z } from "zod";
import { checkModuleShape } from "./module-shape.ts";
import { nearestFlag } from "./nearest-flag.ts";
import { checkRedisConfig, RedisConfigShape } from "./redis-config.ts";

export { redisConnectionOf } from "./redis-config.ts";

export const USAGE = `flotilla-worker: runs Flotilla tasks from Redis

Options (each also read from the environment variable shown):
  --redis URL            REDIS_URL              default ${DEFAULTS.redisUrl}
  --redis-cluster NODES  REDIS_CLUSTER_NODES    a Redis Cluster's seed nodes, host:port,host:port
                                                (used instead of --redis when given)
  --redis-sentinels NODES REDIS_SENTINELS       Redis Sentinel: the sentinels, host:port,host:port
                                                (the master's credentials and db come from --redis)
  --redis-sentinel-name N REDIS_SENTINEL_NAME   the master's name, as the sentinels monitor it
  --redis-sentinel-password P REDIS_SENTINEL_PASSWORD  the sentinels' own password, if they have one
  --redis-tls-ca FILE    REDIS_TLS_CA           TLS: the CA that signed Redis's certificate (PEM);
                                                turns TLS on, as a rediss:// URL does
  --redis-tls-cert FILE  REDIS_TLS_CERT         TLS: a client certificate (PEM), with its key:
  --redis-tls-key FILE   REDIS_TLS_KEY          for a Redis with tls-auth-clients yes
  --prefix P             FLOTILLA_PREFIX        default ${DEFAULTS.prefix}
  --queues a,b           FLOTILLA_QUEUES        default ${DEFAULTS.queue}
  --concurrency N        FLOTILLA_CONCURRENCY   default ${DEFAULTS.concurrency}
  --module PATH          FLOTILLA_MODULE        a module exporting tools, agents, providerFactory,
                                                openAICompatible, memory (stores by name) and/or
                                                graph (graphWorker({ nodes, agents }): node types),
                                                bus (busWorker({ subscriptions }): bus subscriptions),
                                                rateLimits ([{ name, requestsPerMinute, tokensPerMinute }])
  --drain-timeout MS     FLOTILLA_DRAIN_TIMEOUT_MS  default ${DEFAULTS.drainTimeoutMs}
  --default-timeout MS   FLOTILLA_DEFAULT_TIMEOUT_MS  a task's timeout when it sets none (default: no limit)
  --queue-timeouts q=MS,… FLOTILLA_QUEUE_TIMEOUTS  per-queue defaults over --default-timeout
  --signing-secrets S,…  FLOTILLA_SIGNING_SECRETS  run only tasks signed with one of these (the first
                                                signs the tasks this worker creates); prefer the env
                                                var: a command line is visible to other users
  --heartbeat-ttl MS     FLOTILLA_HEARTBEAT_TTL_MS  default ${DEFAULTS.heartbeatTtlMs}
  --lease MS             FLOTILLA_LEASE_MS      default ${DEFAULTS.leaseMs}
  --worker-id ID         FLOTILLA_WORKER_ID     default <hostname>-<pid>-<random>
  --build-id B           FLOTILLA_BUILD_ID      your application's build (git sha, release), shown
                                                with the worker in \`flotilla workers\` and the dashboard
  --log-level L          FLOTILLA_LOG_LEVEL     debug|info|warn|error, default info
  --executor E           FLOTILLA_EXECUTOR      redis (run agents here) | temporal, default redis
  --temporal-address A   TEMPORAL_ADDRESS       default 127.0.0.1:7233
  --temporal-namespace N TEMPORAL_NAMESPACE     default default
  --temporal-task-queue Q FLOTILLA_TEMPORAL_TASK_QUEUE  default flotilla
  --temporal-worker B    FLOTILLA_TEMPORAL_WORKER  1 (also run a Temporal worker in this process) | 0
  --metrics-port P       FLOTILLA_METRICS_PORT  serve /metrics, /healthz and /readyz on this port (off by default)
  --webhook-secret S,…   FLOTILLA_WEBHOOK_SECRET  signs the bus's webhook replies this worker delivers
                                                (a list for a rotation: the first signs); a secret set
                                                in the module wins; prefer the env var
  --version, -V          prints the version
  --help, -h

Models: "provider:model" names resolve through the module's providerFactory, then the built-in
scripted model, then OpenAI-compatible endpoints (the module's openAICompatible, or
FLOTILLA_PROVIDER_<NAME>_BASE_URL and _API_KEY), then installed AI SDK provider packages with their
keys (@ai-sdk/openai + OPENAI_API_KEY, @ai-sdk/anthropic + ANTHROPIC_API_KEY, ...).
`;

const ConfigFields = z.object({
  ...RedisConfigShape,
  prefix: KeyPrefixSchema.default(DEFAULTS.prefix),
  queues: z
    .string()
    .default(DEFAULTS.queue)
    .transform((s) =>
      s
        .split(",")
        .map((q) => q.trim())
        .filter(Boolean),
    )
    .pipe(z.array(QueueNameSchema).min(1, "name at least one queue")),
  concurrency: z.coerce.number().int().positive().default(DEFAULTS.concurrency),
  module: z.string().optional(),
  drainTimeoutMs: z.coerce.number().int().min(0).default(DEFAULTS.drainTimeoutMs),
  defaultTimeoutMs: z.coerce.number().int().positive().optional(),
  signingSecrets: z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string().min(16, "each secret must be at least 16 characters")).min(1))
    .optional(),
  queueTimeouts: z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((pair) => pair.trim())
        .filter(Boolean)
        .map((pair): [string, number] => {
          const [queue = "", ms] = pair.split("=").map((part) => part.trim());
          return [queue, ms === undefined || ms === "" ? Number.NaN : Number(ms)];
        }),
    )
    .pipe(z.array(z.tuple([QueueNameSchema, z.number("expected queue=ms pairs, comma-separated").int().positive()])))
    .transform((pairs) => Object.fromEntries(pairs))
    .optional(),
  heartbeatTtlMs: z.coerce.number().int().min(300).default(DEFAULTS.heartbeatTtlMs),
  leaseMs: z.coerce.number().int().min(300).default(DEFAULTS.leaseMs),
  workerId: z.string().optional(),
  buildId: z.string().min(1).max(200).optional(),
  logLevel: z.enum(["debug", "info", "warn", "error"]).default("info"),
  executor: z.enum(["redis", "temporal"]).default("redis"),
  temporalAddress: z
    .string()
    .regex(/^(\[[0-9A-Fa-f:.]+\]|[^\s/:[\]]+)(:\d{1,5})?$/, "expected host or host:port, with no scheme (e.g. 127.0.0.1:7233)")
    .default("127.0.0.1:7233"),
  temporalNamespace: z.string().default("default"),
  temporalTaskQueue: z.string().default("flotilla"),
  temporalWorker: z
    .enum(["0", "1", "true", "false"])
    .default("1")
    .transform((v) => v === "1" || v === "true"),
  metricsPort: z.coerce.number().int().min(0).max(65535).optional(),
  webhookSecret: z
    .string()
    .transform((s) =>
      s
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string()).min(1, "name at least one secret"))
    .optional(),
});
const ConfigSchema = ConfigFields.superRefine(checkRedisConfig);
export type WorkerAppConfig = z.infer<typeof ConfigSchema>;

/** Each setting's flag and environment variable. */
const SOURCES: Record<string, { flag: string; env: string }> = {
  redis: { flag: "redis", env: ENV.redisUrl },
  redisCluster: { flag: "redis-cluster", env: ENV.redisClusterNodes },
  redisSentinels: { flag: "redis-sentinels", env: "REDIS_SENTINELS" },
  redisSentinelName: { flag: "redis-sentinel-name", env: "REDIS_SENTINEL_NAME" },
  redisSentinelPassword: { flag: "redis-sentinel-password", env: "REDIS_SENTINEL_PASSWORD" },
  redisTlsCa: { flag: "redis-tls-ca", env: "REDIS_TLS_CA" },
  redisTlsCert: { flag: "redis-tls-cert", env: "REDIS_TLS_CERT" },
  redisTlsKey: { flag: "redis-tls-key", env: "REDIS_TLS_KEY" },
  prefix: { flag: "prefix", env: ENV.prefix },
  queues: { flag: "queues", env: "FLOTILLA_QUEUES" },
  concurrency: { flag: "concurrency", env: "FLOTILLA_CONCURRENCY" },
  module: { flag: "module", env: "FLOTILLA_MODULE" },
  drainTimeoutMs: { flag: "drain-timeout", env: "FLOTILLA_DRAIN_TIMEOUT_MS" },
  defaultTimeoutMs: { flag: "default-timeout", env: "FLOTILLA_DEFAULT_TIMEOUT_MS" },
  queueTimeouts: { flag: "queue-timeouts", env: "FLOTILLA_QUEUE_TIMEOUTS" },
  signingSecrets: { flag: "signing-secrets", env: "FLOTILLA_SIGNING_SECRETS" },
  heartbeatTtlMs: { flag: "heartbeat-ttl", env: "FLOTILLA_HEARTBEAT_TTL_MS" },
  leaseMs: { flag: "lease", env: "FLOTILLA_LEASE_MS" },
  workerId: { flag: "worker-id", env: "FLOTILLA_WORKER_ID" },
  buildId: { flag: "build-id", env: "FLOTILLA_BUILD_ID" },
  logLevel: { flag: "log-level", env: "FLOTILLA_LOG_LEVEL" },
  executor: { flag: "executor", env: "FLOTILLA_EXECUTOR" },
  temporalAddress: { flag: "temporal-address", env: "TEMPORAL_ADDRESS" },
  temporalNamespace: { flag: "temporal-namespace", env: "TEMPORAL_NAMESPACE" },
  temporalTaskQueue: { flag: "temporal-task-queue", env: "FLOTILLA_TEMPORAL_TASK_QUEUE" },
  temporalWorker: { flag: "temporal-worker", env: "FLOTILLA_TEMPORAL_WORKER" },
  metricsPort: { flag: "metrics-port", env: "FLOTILLA_METRICS_PORT" },
  webhookSecret: { flag: "webhook-secret", env: ENV.webhookSecret },
};

/** The flags that take no value, with their one-letter forms. */
const SWITCHES = { help: "h", version: "V" } as const;

/**
 * Flags win over environment variables, which win over defaults (the rule of every Flotilla entry
 * point). A flag given empty (`--queues ""`) is refused: it would otherwise fall back to the default
 * without a word. An empty environment variable counts as unset, as in most deployment tools. An
 * unknown flag is a ValidationError naming it and the flag it most likely meant.
 */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): WorkerAppConfig | "help" | "version" {
  const options: Record<string, { type: "string" } | { type: "boolean"; short: string }> = Object.fromEntries([
    ...Object.values(SOURCES).map(({ flag }) => [flag, { type: "string" as const }]),
    ...Object.entries(SWITCHES).map(([flag, short]) => [flag, { type: "boolean" as const, short }]),
  ]);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options, strict: true }) as { values: Record<string, string | boolean | undefined> });
  } catch (err) {
    throw usageError(err);
  }
  if (values.help === true) return "help";
  if (values.version === true) return "version";
  const merged: Record<string, string> = {};
  for (const [key, { flag, env: envName }] of Object.entries(SOURCES)) {
    const given = values[flag];
    if (given === "") throw ValidationError.of("worker configuration", key, `--${flag} is empty`);
    const value = typeof given === "string" ? given : readEnv(envName, env);
    if (value !== undefined) merged[key] = value;
  }
  return parseInput(ConfigSchema, merged, "worker configuration");
}

/** Every flag flotilla-worker takes, without its dashes. */
export const FLAGS: readonly string[] = [...Object.values(SOURCES).map(({ flag }) => flag), ...Object.keys(SWITCHES)];

/** node:util's parseArgs refusal, in the worker's words: the flag at fault and the one it most likely meant. */
function usageError(err: unknown): ValidationError {
  const code = (err as { code?: string }).code;
  const message = err instanceof Error ? err.message : String(err);
  const flag = /'(-{1,2}[^'\s=]+)/.exec(message)?.[1];
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" && flag) {
    const meant = nearestFlag(flag.replace(/^-+/, ""), FLAGS);
    return ValidationError.of("worker configuration", flag, `unknown option${meant ? `: did you mean --${meant}?` : ""}`);
  }
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" && flag) {
    return ValidationError.of("worker configuration", flag, /does not take an argument/.test(message) ? "takes no value" : "needs a value");
  }
  if (code === "ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL") {
    const arg = /'([^']*)'/.exec(message)?.[1] ?? "";
    return ValidationError.of("worker configuration", arg, "unexpected argument: every setting is a --flag (see --help)");
  }
  return ValidationError.of("worker configuration", flag ?? "arguments", message);
}

export interface WorkerModule {
  tools: Record<string, Tool>;
  agents: Array<Agent | Swarm | RunnableSpec> | undefined;
  providerFactory: ProviderFactory | undefined;
  openAICompatible: Record<string, OpenAICompatibleEndpoint> | undefined;
  memory: Record<string, MemoryStore> | undefined;
  /** Graph node types to serve (`export const graph = graphWorker({ nodes, agents })` of @flotilla/graph). */
  graph: NodeExecutor | undefined;
  /** Bus subscriptions to serve (`export const bus = busWorker({ subscriptions })` of @flotilla/bus). */
  bus: SubscriptionRunner | undefined;
  /** Fleet-wide rate limits agents and tools draw from (`export const rateLimits = [{ name, requestsPerMinute, tokensPerMinute }]`). */
  rateLimits: RateLimitOptions[] | undefined;
}

interface ModuleExports {
  tools?: Named<Tool>;
  agents?: Array<Agent | Swarm | RunnableSpec | AgentConfig>;
  providerFactory?: ProviderFactory;
  openAICompatible?: Record<string, OpenAICompatibleEndpoint>;
  memory?: Record<string, MemoryStore>;
  graph?: NodeExecutor;
  bus?: SubscriptionRunner;
  rateLimits?: RateLimitOptions[];
}

type Named<T> = T[] | Record<string, T> | undefined;

function byName<T extends { name: string }>(items: Named<T>): Record<string, T> {
  if (!items) return {};
  const list = Array.isArray(items) ? items : Object.values(items);
  return Object.fromEntries(list.map((item) => [item.name, item]));
}

/**
 * Loads the user's module: `export const tools` (an array or a record by name), `agents`,
 * `providerFactory`, `openAICompatible`, `memory`, `graph` (graph node types: `graphWorker(…)` of
 * @flotilla/graph), `bus` (subscriptions: `busWorker(…)` of @flotilla/bus), `rateLimits` (fleet-wide
 * rate limits) — or the same as its default export; anything else stops the start (module-shape.ts).
 */
export async function loadWorkerModule(path: string | undefined, cwd = process.cwd()): Promise<WorkerModule> {
  const empty: WorkerModule = {
    tools: {},
    agents: undefined,
    providerFactory: undefined,
    openAICompatible: undefined,
    memory: undefined,
    graph: undefined,
    bus: undefined,
    rateLimits: undefined,
  };
  if (!path) return empty;
  const url = pathToFileURL(isAbsolute(path) ? path : resolve(cwd, path)).href;
  const source = checkModuleShape(await import(url), path) as ModuleExports;
  return {
    tools: byName(source.tools),
    agents: source.agents as Array<Agent | Swarm | RunnableSpec> | undefined,
    providerFactory: source.providerFactory,
    openAICompatible: source.openAICompatible,
    memory: source.memory,
    graph: source.graph,
    bus: source.bus,
    rateLimits: source.rateLimits,
  };
}
