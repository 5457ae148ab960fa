// Acting on one task: `cancel`, `retry`, and the human-in-the-loop `signal`, `approve`, `reject`.
import type { JsonValue } from "@flotilla/client";
import type { Command } from "commander";
import { json, taskId } from "../args.ts";
import type { Context } from "../context.ts";
import { CliError } from "../errors.ts";
import { brief } from "../format.ts";

const ID = ["<id>", "the task id (<queue>/<name>; a bare name is in queue default)"] as const;

export function registerControl(program: Command, ctx: Context): void {
  program
    .command("cancel")
    .description("cancel a task: a waiting one ends CANCELLED at once, a running one is stopped by its worker")
    .argument(ID[0], ID[1], taskId)
    .option("--reason <text>", "why (kept on the task)")
    .action(
      ctx.action(async (id: string, flags: { reason?: string }) => {
        const { outcome, status } = await ctx.client().handle(id).cancel(flags.reason);
        if (outcome === "finished") throw new CliError("ALREADY_ENDED", `task ${id} already ended (${status ?? "gone"}): nothing to cancel`);
        ctx.done(
          { taskId: id, outcome, status },
          outcome === "cancelled" ? `cancelled ${id}` : `cancel requested: ${id} is ${status ?? "RUNNING"}, its worker stops it`,
        );
      }),
    );

  program
    .command("retry")
    .description("run a FAILED task again (its dead letter re-queued, its retries reset)")
    .argument(ID[0], ID[1], taskId)
    .action(
      ctx.action(async (id: string) => {
        const handle = await ctx.client().handle(id).retry();
        const { status } = await handle.status();
        ctx.done({ taskId: id, status }, `retried ${id}: ${status}`);
      }),
    );

  program
    .command("signal")
    .description("send a signal to a task WAITING for it (a tool's waitForSignal, or an approval)")
    .argument(ID[0], ID[1], taskId)
    .argument("<name>", "the signal's name")
    .argument("[json]", "its payload, as JSON (default: null)", json)
    .action(
      ctx.action(async (id: string, name: string, payload: JsonValue | undefined) => {
        await ctx
          .client()
          .handle(id)
          .signal(name, payload ?? null);
        sent(ctx, id, name, payload ?? null);
      }),
    );

  for (const [verb, approved] of [
    ["approve", true],
    ["reject", false],
  ] as const) {
    program
      .command(verb)
      .description(approved ? "approve the tool call a task waits on: it runs" : "reject the tool call a task waits on: it does not run, the model is told why")
      .argument(ID[0], ID[1], taskId)
      .argument("[reason]", "why (the model is told)")
      .option("--signal <name>", "the tool's approval signal", "approval")
      .action(
        ctx.action(async (id: string, reason: string | undefined, flags: { signal: string }) => {
          const handle = ctx.client().handle(id);
          await (approved ? handle.approve(reason, flags.signal) : handle.reject(reason, flags.signal));
          sent(ctx, id, flags.signal, { approved, ...(reason !== undefined && { reason }) });
        }),
      );
  }
}

function sent(ctx: Context, taskId: string, signal: string, payload: JsonValue): void {
  if (ctx.json) ctx.printJson({ taskId, signal, payload });
  else ctx.print(`sent ${signal} ${brief(payload, 120)} to ${taskId}\n`);
}
