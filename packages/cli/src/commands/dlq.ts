// `flotilla dlq list|show|requeue|purge`: a queue's dead letters, the entries that could not run.
import type { DeadLetter } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer } from "../args.ts";
import type { Context } from "../context.ts";
import { CliError } from "../errors.ts";
import { brief, type Colors, fields, table, time } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

export function registerDlq(program: Command, ctx: Context): void {
  const dlq = program.command("dlq").description("a queue's dead letters: list, show, requeue, purge");

  dlq
    .command("list")
    .description("the dead letters of a queue, oldest first")
    .argument("<queue>")
    .addOption(new Option("-n, --count <n>", "at most this many").argParser(integer(1, 10_000)).default(100))
    .option("--after <id>", "those after this dead letter id (the last one seen)")
    .addOption(watchOption())
    .action(
      ctx.action(async (queue: string, flags: { count: number; after?: string; watch?: number }) => {
        await show(
          ctx,
          async () => {
            const deadLetters = await ctx.client().deadLetters.list(queue, { count: flags.count, ...(flags.after !== undefined && { after: flags.after }) });
            return { json: { queue, deadLetters }, text: () => lettersTable(ctx.colors, deadLetters) };
          },
          flags.watch,
        );
      }),
    );

  dlq
    .command("show")
    .description("one dead letter: its task, reason and entry")
    .argument("<queue>")
    .argument("<id>", "the dead letter's id (from dlq list)")
    .action(
      ctx.action(async (queue: string, id: string) => {
        const letter = await ctx.client().deadLetters.get(queue, id);
        if (!letter) throw new CliError("DEAD_LETTER_NOT_FOUND", `no dead letter ${id} in queue "${queue}"`);
        await show(ctx, async () => ({ json: letter, text: () => letterDetails(ctx.colors, letter) }));
      }),
    );

  dlq
    .command("requeue")
    .description("send a dead letter's task back to its queue (PENDING, retries reset)")
    .argument("<queue>")
    .argument("<id>", "the dead letter's id (from dlq list)")
    .action(
      ctx.action(async (queue: string, id: string) => {
        const handle = await ctx.client().deadLetters.requeue(queue, id);
        ctx.done({ queue, id, taskId: handle.taskId }, `requeued ${id}: task ${handle.taskId} is PENDING again`);
      }),
    );

  dlq
    .command("purge")
    .description("delete every dead letter of a queue (their tasks' FAILED records stay)")
    .argument("<queue>")
    .action(
      ctx.action(async (queue: string) => {
        const purged = await ctx.client().deadLetters.purge(queue);
        ctx.done({ queue, purged }, `purged ${purged} dead letter${purged === 1 ? "" : "s"} of queue ${queue}`);
      }),
    );
}

function lettersTable(c: Colors, letters: readonly DeadLetter[]): string {
  const rows = letters.map((l) => [l.id, l.taskId ?? c.red("(malformed)"), l.priority, time(l.at), brief(l.reason, 70)]);
  return table(c, [{ header: "ID" }, { header: "TASK" }, { header: "LANE" }, { header: "AT" }, { header: "REASON" }], rows, "no dead letters");
}

function letterDetails(c: Colors, l: DeadLetter): string {
  return fields(c, [
    ["dead letter", c.bold(l.id)],
    ["queue", l.queue],
    ["task", l.taskId ?? c.red("(malformed: no task)")],
    ["lane", l.priority],
    ["at", time(l.at)],
    ["reason", l.reason],
    ["entry", l.entryId],
    ["extra", Object.keys(l.extra).length ? brief(l.extra, 300) : undefined],
    ["fields", l.fields ? brief(l.fields, 300) : undefined],
  ]);
}
