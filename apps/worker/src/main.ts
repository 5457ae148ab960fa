#!/usr/bin/env node
import { jsonLogger, Worker } from "@flotilla/worker";
import { loadConfig, loadWorkerModule, USAGE } from "./config.ts";

async function main(): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}`);
    return 2;
  }
  if (config === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = jsonLogger({ service: "flotilla-worker" }, config.logLevel);
  const mod = await loadWorkerModule(config.module);
  const worker = new Worker({
    redis: config.redis,
    prefix: config.prefix,
    queues: config.queues,
    concurrency: config.concurrency,
    heartbeatTtlMs: config.heartbeatTtlMs,
    leaseMs: config.leaseMs,
    tools: mod.tools,
    ...(mod.providerFactory && { providerFactory: mod.providerFactory }),
    ...(mod.openAICompatible && { openAICompatible: mod.openAICompatible }),
    ...(mod.memory && { memory: mod.memory }),
    ...(mod.agents && { agents: mod.agents }),
    ...(config.workerId && { workerId: config.workerId }),
    logger: log,
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      log.warn("second signal: exiting now", { signal });
      process.exit(130);
    }
    stopping = true;
    log.info("draining", { signal, drainTimeoutMs: config.drainTimeoutMs });
    worker.stop({ drainTimeoutMs: config.drainTimeoutMs }).then(
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
  await worker.start();
  log.info("ready", { workerId: worker.workerId, tools: Object.keys(mod.tools), memory: ["redis", ...Object.keys(mod.memory ?? {})] });
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err) => {
    process.stderr.write(`${JSON.stringify({ level: "error", msg: "worker failed to start", error: String(err?.message ?? err) })}\n`);
    process.exit(1);
  },
);
