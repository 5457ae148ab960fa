import { isAbsolute, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type { Agent, AgentConfig, ModelProvider, Tool } from "@flotilla/agent";
import { type AgentSpec, parseInput, QueueNameSchema } from "@flotilla/core";
import { z } from "zod";

export const USAGE = `flotilla-worker: runs Flotilla tasks from Redis

Options (each also read from the environment variable shown):
  --redis URL            REDIS_URL              default redis://127.0.0.1:6379
  --prefix P             FLOTILLA_PREFIX        default flotilla
  --queues a,b           FLOTILLA_QUEUES        default default
  --concurrency N        FLOTILLA_CONCURRENCY   default 4
  --module PATH          FLOTILLA_MODULE        a module exporting tools, providers and/or agents
  --drain-timeout MS     FLOTILLA_DRAIN_TIMEOUT_MS  default 30000
  --heartbeat-ttl MS     FLOTILLA_HEARTBEAT_TTL_MS  default 15000
  --lease MS             FLOTILLA_LEASE_MS      default 30000
  --worker-id ID         FLOTILLA_WORKER_ID     default <hostname>-<pid>-<random>
  --log-level L          FLOTILLA_LOG_LEVEL     debug|info|warn|error, default info
  --help
`;

const ConfigSchema = z.object({
  redis: z.string().default("redis://127.0.0.1:6379"),
  prefix: z.string().default("flotilla"),
  queues: z
    .string()
    .default("default")
    .transform((s) => s.split(",").map((q) => q.trim()).filter(Boolean))
    .pipe(z.array(QueueNameSchema).min(1)),
  concurrency: z.coerce.number().int().positive().default(4),
  module: z.string().optional(),
  drainTimeoutMs: z.coerce.number().int().min(0).default(30_000),
  heartbeatTtlMs: z.coerce.number().int().min(300).default(15_000),
  leaseMs: z.coerce.number().int().min(300).default(30_000),
  workerId: z.string().optional(),
  logLevel: z.enum(["debug", "info", "warn", "error"]).default("info"),
});
export type WorkerAppConfig = z.infer<typeof ConfigSchema>;

const ENV: Record<string, string> = {
  redis: "REDIS_URL",
  prefix: "FLOTILLA_PREFIX",
  queues: "FLOTILLA_QUEUES",
  concurrency: "FLOTILLA_CONCURRENCY",
  module: "FLOTILLA_MODULE",
  drainTimeoutMs: "FLOTILLA_DRAIN_TIMEOUT_MS",
  heartbeatTtlMs: "FLOTILLA_HEARTBEAT_TTL_MS",
  leaseMs: "FLOTILLA_LEASE_MS",
  workerId: "FLOTILLA_WORKER_ID",
  logLevel: "FLOTILLA_LOG_LEVEL",
};

/** Flags win over environment variables, which win over defaults. */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): WorkerAppConfig | "help" {
  const { values } = parseArgs({
    args: argv,
    options: {
      redis: { type: "string" },
      prefix: { type: "string" },
      queues: { type: "string" },
      concurrency: { type: "string" },
      module: { type: "string" },
      "drain-timeout": { type: "string" },
      "heartbeat-ttl": { type: "string" },
      lease: { type: "string" },
      "worker-id": { type: "string" },
      "log-level": { type: "string" },
      help: { type: "boolean" },
    },
    strict: true,
  });
  if (values.help) return "help";
  const flags: Record<string, string | undefined> = {
    redis: values.redis,
    prefix: values.prefix,
    queues: values.queues,
    concurrency: values.concurrency,
    module: values.module,
    drainTimeoutMs: values["drain-timeout"],
    heartbeatTtlMs: values["heartbeat-ttl"],
    leaseMs: values.lease,
    workerId: values["worker-id"],
    logLevel: values["log-level"],
  };
  const merged: Record<string, string> = {};
  for (const [key, envName] of Object.entries(ENV)) {
    const value = flags[key] ?? env[envName];
    if (value !== undefined && value !== "") merged[key] = value;
  }
  return parseInput(ConfigSchema, merged, "worker configuration");
}

export interface WorkerModule {
  tools: Record<string, Tool>;
  providers: Record<string, ModelProvider>;
  agents: Array<Agent | AgentSpec> | undefined;
}

type Named<T> = T[] | Record<string, T> | undefined;

function byName<T extends { name: string }>(items: Named<T>): Record<string, T> {
  if (!items) return {};
  const list = Array.isArray(items) ? items : Object.values(items);
  return Object.fromEntries(list.map((item) => [item.name, item]));
}

/** Loads the user's module: `export const tools`, `providers` (arrays or records by name), `agents`. */
export async function loadWorkerModule(path: string | undefined, cwd = process.cwd()): Promise<WorkerModule> {
  if (!path) return { tools: {}, providers: {}, agents: undefined };
  const url = pathToFileURL(isAbsolute(path) ? path : resolve(cwd, path)).href;
  const mod = (await import(url)) as {
    tools?: Named<Tool>;
    providers?: Named<ModelProvider>;
    agents?: Array<Agent | AgentSpec | AgentConfig>;
    default?: { tools?: Named<Tool>; providers?: Named<ModelProvider>; agents?: Array<Agent | AgentSpec> };
  };
  const source = mod.default && !mod.tools && !mod.providers && !mod.agents ? mod.default : mod;
  return {
    tools: byName(source.tools),
    providers: byName(source.providers),
    agents: source.agents as Array<Agent | AgentSpec> | undefined,
  };
}
