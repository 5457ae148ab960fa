// `flotilla run cancel <runId>` and `flotilla run retry <runId>`: a graph run's cancel and retry, shaped
// as `flotilla cancel` and `flotilla retry` are for a task (their messages, their exit codes).
import type { Command } from "commander";
import type { Context } from "../context.ts";
import { CliError } from "../errors.ts";

const ID = ["<runId>", "the run id"] as const;

/** Adds `cancel` and `retry` under `run` (the command that shows one run). */
export function registerRunControl(run: Command, ctx: Context): void {
  run
    .command("cancel")
    .description("cancel a graph run: no node starts afterwards, waiting ones end CANCELLED, running ones are stopped by their workers (CANCELLING meanwhile)")
    .argument(ID[0], ID[1])
    .option("--reason <text>", "why (kept on the run)")
    .action(
      ctx.action(async (id: string, flags: { reason?: string }) => {
        const { outcome, status } = await ctx.client().graphs.run(id).cancel(flags.reason);
        // As for a task: a run that had ended is nothing to cancel (exit 1), not a silent success.
        if (outcome === "finished") throw new CliError("ALREADY_ENDED", `run ${id} already ended (${status}): nothing to cancel`);
        ctx.done({ runId: id, outcome, status }, `cancelled run ${id}`);
      }),
    );

  run
    .command("retry")
    .description("resume a FAILED or CANCELLED graph run: its failed, cancelled and unfinished nodes run again, the rest keep their outputs")
    .argument(ID[0], ID[1])
    .action(
      ctx.action(async (id: string) => {
        // Refused (RUNNING or SUCCEEDED) or unknown: the graph package's typed errors, reported as one line, exit 1.
        await ctx.client().graphs.run(id).retry();
        ctx.done({ runId: id, status: "RUNNING" }, `retried run ${id}: RUNNING`);
      }),
    );
}
