// `flotilla workers`: the fleet's workers, live and dead, with what they serve and run.
import type { FleetStatus } from "@flotilla/client";
import type { Command } from "commander";
import type { Context } from "../context.ts";
import { ago, type Colors, duration, list, table } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

export function registerWorkers(program: Command, ctx: Context): void {
  program
    .command("workers")
    .description("the workers: id, state (and why not ready), host, version, queues, node types, running tasks, last beat")
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const fleet = await ctx.client().fleet.status();
            return { json: fleet, text: () => workersTable(ctx.colors, fleet) };
          },
          flags.watch,
        );
      }),
    );
}

type WorkerRow = FleetStatus["workers"][number];

/** dead (missed two beats), else the state it reports (`live` for workers that predate states). */
function stateCell(c: Colors, w: WorkerRow): string {
  if (!w.alive) return c.red("dead");
  switch (w.state) {
    case undefined:
      return c.green("live");
    case "running":
      return c.green(w.state);
    case "not-ready":
      return c.red(w.state);
    default:
      return c.yellow(w.state);
  }
}

function workersTable(c: Colors, fleet: FleetStatus): string {
  const rows = fleet.workers.map((w) => [
    w.workerId,
    stateCell(c, w),
    w.hostname === undefined ? "-" : `${w.hostname}${w.pid === undefined ? "" : `:${w.pid}`}`,
    w.version === undefined ? "-" : `${w.version}${w.buildId === undefined ? "" : ` (${w.buildId})`}`,
    list(w.queues),
    list(w.nodeTypes),
    w.running === undefined ? "-" : `${w.running.length}/${w.concurrency ?? "?"}`,
    w.completed === undefined ? "-" : String(w.completed),
    w.failed === undefined ? "-" : String(w.failed),
    w.startedAt === undefined ? "-" : duration(fleet.at - w.startedAt),
    ago(w.lastBeat, fleet.at),
  ]);
  const r = "right" as const;
  const columns = [
    { header: "WORKER" },
    { header: "STATE" },
    { header: "HOST:PID" },
    { header: "VERSION" },
    { header: "QUEUES" },
    { header: "NODE TYPES" },
    { header: "RUNNING", align: r },
    { header: "COMPLETED", align: r },
    { header: "FAILED", align: r },
    { header: "UP", align: r },
    { header: "LAST BEAT", align: r },
  ];
  const summary = c.dim(`${fleet.live} live, ${fleet.dead} dead, ${fleet.running} task${fleet.running === 1 ? "" : "s"} running`);
  // Why each live worker is not ready, under the table: a reason's detail is too long for a cell.
  const why = fleet.workers
    .filter((w) => w.alive && w.reasons?.length)
    .flatMap((w) => w.reasons!.map((r) => `${c.red("!")} ${w.workerId} ${r.reason} since ${ago(r.since, fleet.at)}: ${r.detail}\n`));
  return `${table(c, columns, rows, "no workers")}${why.join("")}${summary}\n`;
}
