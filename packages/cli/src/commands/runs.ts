// `flotilla runs` and `flotilla run <id>`: workflow graph runs (@flotilla/graph) and their nodes; `run cancel` and `run retry` are in run-control.ts.
import type { FlotillaClient } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer, oneOf, RUN_STATUSES } from "../args.ts";
import type { Context } from "../context.ts";
import { brief, type Colors, duration, fields, status, table, time } from "../format.ts";
import { show } from "../view.ts";
import { registerRunControl } from "./run-control.ts";
import { watchOption } from "./tasks.ts";

type RunPage = Awaited<ReturnType<FlotillaClient["listRuns"]>>;
type RunStatus = Awaited<ReturnType<ReturnType<FlotillaClient["graphs"]["run"]>["status"]>>;

interface RunsFlags {
  status?: (typeof RUN_STATUSES)[number];
  graph?: string;
  limit: number;
  cursor?: string;
  watch?: number;
}

export function registerRuns(program: Command, ctx: Context): void {
  program
    .command("runs")
    .description("graph runs, newest first")
    .addOption(new Option("-s, --status <status>", `only this status (${RUN_STATUSES.join(", ")})`).argParser(oneOf(RUN_STATUSES)))
    .option("-g, --graph <name>", "only runs of this graph")
    .addOption(new Option("-n, --limit <n>", "at most this many").argParser(integer(1, 1000)).default(50))
    .option("--cursor <cursor>", "the page after this one (a listing's cursor)")
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: RunsFlags) => {
        const options = {
          limit: flags.limit,
          ...(flags.status !== undefined && { status: flags.status }),
          ...(flags.graph !== undefined && { graph: flags.graph }),
          ...(flags.cursor !== undefined && { cursor: flags.cursor }),
        };
        await show(
          ctx,
          async () => {
            const page = await ctx.client().listRuns(options);
            return { json: page, text: () => runsTable(ctx.colors, page) };
          },
          flags.watch,
        );
      }),
    );

  const run = program
    .command("run")
    .description("a graph run and each of its node instances (run cancel / run retry: act on one)")
    .argument("<id>", "the run id")
    .action(
      ctx.action(async (id: string) => {
        const run = await ctx.client().graphs.run(id).status();
        await show(ctx, async () => ({ json: run, text: () => runDetails(ctx.colors, run) }));
      }),
    );
  registerRunControl(run, ctx);
}

function runsTable(c: Colors, page: RunPage): string {
  const rows = page.runs.map((r) => [
    r.runId,
    r.graph,
    status(c, r.status),
    time(r.createdAt),
    r.endedAt === undefined ? "-" : duration(r.endedAt - r.createdAt),
    r.error === undefined ? "" : brief(r.error, 60),
  ]);
  const columns = [
    { header: "RUN" },
    { header: "GRAPH" },
    { header: "STATUS" },
    { header: "STARTED" },
    { header: "TOOK", align: "right" as const },
    { header: "ERROR" },
  ];
  const more = page.cursor ? c.dim(`more: --cursor ${page.cursor}\n`) : "";
  return table(c, columns, rows, "no graph runs") + more;
}

function runDetails(c: Colors, run: RunStatus): string {
  const head = fields(c, [
    ["run", c.bold(run.runId)],
    ["graph", run.graph],
    ["status", status(c, run.status)],
    ["started", time(run.createdAt)],
    ["ended", run.endedAt === undefined ? undefined : time(run.endedAt)],
    ["error", run.error === undefined ? undefined : c.red(brief(run.error, 200))],
  ]);
  const rows = run.nodes.map((n) => [
    n.instance,
    status(c, n.status),
    n.taskId,
    n.error !== undefined ? c.red(brief(n.error, 60)) : n.output !== undefined ? brief(n.output, 60) : "",
  ]);
  return `${head}\n${table(c, [{ header: "NODE" }, { header: "STATUS" }, { header: "TASK" }, { header: "OUTPUT / ERROR" }], rows, "no nodes yet")}`;
}
