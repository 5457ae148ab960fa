#!/usr/bin/env node
import { closeRedis, describeRedis, disconnectRedis, openRedis } from "@flotilla/core/redis";
import type { TemporalWorker } from "@flotilla/temporal";
import { defaultWorkerId, type Executor, jsonLogger, Worker } from "@flotilla/worker";
import { loadConfig, redisConnectionOf, USAGE } from "./config.ts";
import { routeConsoleToLog } from "./console-log.ts";
import { type ReadinessReport, startEndpoints } from "./endpoints.ts";
import { watchReadiness } from "./readiness-log.ts";
import { describeStartupError, loadModule, loadTemporal } from "./startup.ts";
import { appVersion } from "./version.ts";
import { applyWebhookSecret } from "./webhook-secret.ts";

async function main(): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  const argv = process.argv.slice(2);
  try {
    config = loadConfig(argv, process.env);
  } catch (err) {
    // The reason last, where the eye lands, not above the whole usage (which would scroll it away).
    process.stderr.write(`usage: flotilla-worker [options] (flotilla-worker --help lists them)\n${(err as Error).message}\n`);
    return 2;
  }
  if (config === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (config === "version") {
    process.stdout.write(`${appVersion()}\n`);
    return 0;
  }
  const log = jsonLogger({ service: "flotilla-worker" }, config.logLevel);
  routeConsoleToLog(log);
  const mod = await loadModule(config.module);
  if (config.webhookSecret) {
    const fromFlag = argv.some((arg) => arg === "--webhook-secret" || arg.startsWith("--webhook-secret="));
    applyWebhookSecret(mod.bus, config.webhookSecret, fromFlag, log);
  }
  // Known before the worker is made: the metrics name it (service.instance.id).
  const workerId = config.workerId ?? defaultWorkerId();
  // Opt-in endpoints; the worker is made below, so readiness asks it through this reference.
  let readiness = (): ReadinessReport => ({ ready: false, reasons: [{ reason: "starting", detail: "the worker is being set up" }] });
  const endpoints = config.metricsPort === undefined ? undefined : await startEndpoints(config.metricsPort, () => readiness(), workerId);
  // Temporal mode: tasks become workflows; this process may also serve them as a Temporal worker.
  // @flotilla/temporal is loaded only here, so Redis-mode deployments never load Temporal.
  let temporal: { executor: Executor & { close(): Promise<void> }; worker?: TemporalWorker; running?: Promise<void> } | undefined;
  if (config.executor === "temporal") {
    const { createTemporalWorker, temporalExecutor } = await loadTemporal();
    const settings = { address: config.temporalAddress, namespace: config.temporalNamespace, taskQueue: config.temporalTaskQueue };
    temporal = { executor: temporalExecutor({ ...settings, logger: log }) };
    if (config.temporalWorker) {
      temporal.worker = await createTemporalWorker({
        ...settings,
        redis: redisConnectionOf(config),
        prefix: config.prefix,
        tools: mod.tools,
        providerFactory: mod.providerFactory,
        openAICompatible: mod.openAICompatible,
        memory: mod.memory,
      });
    }
  }
  // The worker's command connection, opened here (with the worker's own connection policy) so this
  // process can log its loss and return; the worker duplicates it for its blocking and subscriber
  // connections, and leaves closing it to us.
  const redis = openRedis(redisConnectionOf(config), "command");
  const worker = new Worker({
    redis: redis.redis,
    prefix: config.prefix,
    queues: config.queues,
    concurrency: config.concurrency,
    heartbeatTtlMs: config.heartbeatTtlMs,
    leaseMs: config.leaseMs,
    ...(config.defaultTimeoutMs !== undefined && { defaultTimeoutMs: config.defaultTimeoutMs }),
    ...(config.queueTimeouts && { queueTimeouts: config.queueTimeouts }),
    ...(config.signingSecrets && { signingSecrets: config.signingSecrets }),
    tools: mod.tools,
    ...(mod.providerFactory && { providerFactory: mod.providerFactory }),
    ...(mod.openAICompatible && { openAICompatible: mod.openAICompatible }),
    ...(mod.memory && { memory: mod.memory }),
    ...(mod.agents && { agents: mod.agents }),
    ...(mod.graph && { graph: mod.graph }),
    ...(mod.bus && { bus: mod.bus }),
    ...(mod.rateLimits && { rateLimits: mod.rateLimits }),
    ...(temporal && { executor: temporal.executor }),
    ...(endpoints && { metrics: endpoints.metrics }),
    workerId,
    ...(config.buildId && { buildId: config.buildId }),
    logger: log,
  });

  let stopping = false;
  let unwatch = () => {};
  const stop = (signal: string) => {
    if (stopping) {
      log.warn("second signal: exiting now", { signal });
      process.exit(130);
    }
    stopping = true;
    unwatch();
    log.info("draining", { signal, drainTimeoutMs: config.drainTimeoutMs });
    // The command connection is lent to the worker, which ends only its own when Redis is still out
    // of reach at the drain deadline: this one is ours to end then, or the drain would wait for ever.
    const deadline = Date.now() + config.drainTimeoutMs;
    const giveUpOnRedis = setInterval(() => {
      if (Date.now() < deadline || redis.redis.status === "ready") return;
      clearInterval(giveUpOnRedis);
      disconnectRedis(redis.redis);
    }, 250);
    worker
      .stop({ drainTimeoutMs: config.drainTimeoutMs })
      .finally(() => clearInterval(giveUpOnRedis))
      .then(async () => {
        await closeRedis(redis);
        // The Temporal worker closes its connections (Redis, Temporal) once run() has ended.
        temporal?.worker?.shutdown();
        await temporal?.running?.catch(() => {});
        await temporal?.executor.close();
        await endpoints?.close();
      })
      .then(
        () => process.exit(0),
        (err) => {
          log.error("stop failed", { err });
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  worker.on("worker:error", (err) => log.debug("worker error", { err }));
  readiness = () => worker.readiness;
  await worker.start();
  if (!stopping) unwatch = watchReadiness({ readiness: () => worker.readiness, redis: describeRedis(redis.redis), log });
  if (temporal?.worker) {
    temporal.running = temporal.worker.run();
    temporal.running.catch((err: unknown) => {
      if (stopping) return;
      log.error("temporal worker failed", { err });
      process.exit(1);
    });
  }
  log.info("ready", {
    workerId: worker.workerId,
    tools: Object.keys(mod.tools),
    memory: ["redis", ...Object.keys(mod.memory ?? {})],
    executor: config.executor,
    ...(endpoints && { metricsPort: endpoints.port }),
  });
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err: unknown) => {
    const { exitCode, text } = describeStartupError(err);
    process.stderr.write(text);
    process.exit(exitCode);
  },
);
