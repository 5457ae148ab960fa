// `flotilla watch`: the fleet's lifecycle as it happens — tasks submitted, started and finished,
// workers joining, leaving and changing state, graph runs — until Ctrl-C.
import type { WatchEvent } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer } from "../args.ts";
import type { Context } from "../context.ts";
import { EXIT } from "../errors.ts";
import { type Colors, status, time } from "../format.ts";

export function registerWatch(program: Command, ctx: Context): void {
  program
    .command("watch")
    .description("follow the fleet live: tasks submitted/started/finished, workers joining/leaving/changing state, graph runs (--json: one event per line)")
    .option("-q, --queue <queue>", "only this queue's tasks and the workers serving it")
    .addOption(new Option("--poll <ms>", "how often submissions, workers and runs are read").argParser(integer(50, 60_000)).default(1000))
    .action(
      ctx.action(async (flags: { queue?: string; poll: number }) => {
        const watch = ctx.client().watch({ ...(flags.queue !== undefined && { queue: flags.queue }), pollMs: flags.poll });
        const stop = () => void watch.close();
        ctx.signal?.addEventListener("abort", stop, { once: true });
        try {
          await watch.ready;
          // On stderr, under --json too: stdout stays one JSON event per line.
          ctx.note(`watching ${flags.queue === undefined ? "the fleet" : `queue ${flags.queue}`}: Ctrl-C to stop`);
          for await (const event of watch) {
            if (ctx.json) ctx.printJson(event);
            else ctx.print(`${line(ctx.colors, event)}\n`);
          }
        } finally {
          ctx.signal?.removeEventListener("abort", stop);
          await watch.close();
        }
        // Ctrl-C is how a watch ends: not a failure (as with --watch).
        return EXIT.OK;
      }),
    );
}

/** `12:00:01.234  task.finished  emails/abc  COMPLETED (attempt 1)`: time, type, subject, detail. */
function line(c: Colors, e: WatchEvent): string {
  const [subject, detail] = describe(c, e);
  return `${c.dim(time(e.at))}  ${e.type.padEnd(14)}  ${subject}${detail ? `  ${detail}` : ""}`;
}

function describe(c: Colors, e: WatchEvent): [string, string] {
  switch (e.type) {
    case "task.submitted":
      return [e.taskId, ""];
    case "task.started":
      return [e.taskId, `attempt ${e.attempt}${e.workerId ? ` on ${e.workerId}` : ""}`];
    case "task.finished":
      return [e.taskId, `${status(c, e.status)}${e.error ? ` [${e.error.code}] ${e.error.message}` : ""}`];
    case "task.status":
      return [e.taskId, status(c, e.status)];
    case "worker.joined":
      return [e.workerId, `${e.hostname ?? "?"} serving ${e.queues.join(",") || "-"}`];
    case "worker.left":
      return [e.workerId, e.reason === "dead" ? c.red("dead (stopped beating)") : "stopped"];
    case "worker.state":
      return [e.workerId, `${e.state}${e.reasons.map((r) => ` — ${r.reason}: ${r.detail}`).join("")}`];
    case "run.started":
      return [e.runId, e.graph];
    case "run.finished":
      return [e.runId, `${e.graph} ${status(c, e.status)}`];
    case "watch.lagged":
      return [c.yellow(`${e.dropped} events dropped`), "(this reader fell behind)"];
  }
}
