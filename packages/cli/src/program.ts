// The command line: the global options, every command, and the help around them.
import { readFileSync } from "node:fs";
import { Command } from "commander";
import { registerAlerts } from "./commands/alerts.ts";
import { registerBus } from "./commands/bus.ts";
import { registerControl } from "./commands/control.ts";
import { registerDlq } from "./commands/dlq.ts";
import { registerQueues } from "./commands/queues.ts";
import { registerRuns } from "./commands/runs.ts";
import { registerSchedules } from "./commands/schedules.ts";
import { registerStream } from "./commands/stream.ts";
import { registerSubmit } from "./commands/submit.ts";
import { registerTasks } from "./commands/tasks.ts";
import { registerWatch } from "./commands/watch.ts";
import { registerWorkers } from "./commands/workers.ts";
import type { Context } from "./context.ts";
import { useColor } from "./format.ts";
import { ENV } from "./options.ts";

/** This package's version (its package.json sits one folder up from src/ and from dist/ alike). */
function version(): string {
  try {
    return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}

const AFTER_HELP = `
Exit codes:
  0    done
  1    failed: an unknown id, Redis unreachable, an operation refused, a followed task that failed
  2    usage: the command line was wrong
  130  stream / submit --follow stopped by Ctrl-C before the task ended

Environment:
  ${ENV.redis}            the Redis (when no --redis; default redis://127.0.0.1:6379)
  ${ENV.cluster}  a Redis Cluster's seed nodes, host:port,... (when no --redis)
  ${ENV.prefix}      the key prefix (when no --prefix; default flotilla)
  ${ENV.noColor}             no colour (there is none off a terminal anyway)

Task ids are <queue>/<name>; a bare name is in queue "default".`;

/** A new program (commander keeps parsed values on its commands: one per run). */
export function buildProgram(ctx: Context): Command {
  const { io } = ctx;
  const program = new Command("flotilla")
    .description("The command line of a Flotilla fleet: tasks, streams, queues, dead letters, workers, alerts, schedules, signals.")
    .version(version(), "-V, --version")
    .option("--redis <url>", `the Redis URL (default: $${ENV.redis}, else redis://127.0.0.1:6379)`)
    .option("--prefix <prefix>", `the key prefix the fleet uses (default: $${ENV.prefix}, else "flotilla")`)
    .option("--json", "machine output: one JSON document per line, stable fields, no colour")
    .addHelpText("after", AFTER_HELP)
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => io.stdout.write(text),
      writeErr: (text) => io.stderr.write(text),
      getOutHasColors: () => useColor(io.stdout, io.env),
      getErrHasColors: () => useColor(io.stderr, io.env),
    });
  for (const register of [
    registerTasks,
    registerStream,
    registerSubmit,
    registerControl,
    registerQueues,
    registerDlq,
    registerWorkers,
    registerAlerts,
    registerSchedules,
    registerRuns,
    registerBus,
    registerWatch,
  ]) {
    register(program, ctx);
  }
  // Subcommands report their usage errors as the program does (exitOverride, output) by inheriting its settings.
  return program;
}
