// `flotilla schedules list|pause|resume|delete`: the cron and interval schedules the workers fire.
import type { ScheduleInfo } from "@flotilla/client";
import type { Command } from "commander";
import type { Context } from "../context.ts";
import { CliError } from "../errors.ts";
import { ago, type Colors, duration, table } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

export function registerSchedules(program: Command, ctx: Context): void {
  const schedules = program.command("schedules").description("cron and interval schedules: list, pause, resume, delete");

  schedules
    .command("list", { isDefault: true })
    .description("every schedule, paused ones too")
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const list = await ctx.client().schedules.list();
            return { json: { schedules: list }, text: () => schedulesTable(ctx.colors, list, Date.now()) };
          },
          flags.watch,
        );
      }),
    );

  const change = [
    ["pause", "stop firing it until resumed", "paused"],
    ["resume", "fire it again from its next tick (missed ticks are not made up)", "resumed"],
    ["delete", "delete it (the tasks it fired stay)", "deleted"],
  ] as const;
  for (const [verb, description, done] of change) {
    schedules
      .command(verb)
      .description(description)
      .argument("<id>", "the schedule's id")
      .action(
        ctx.action(async (id: string) => {
          const client = ctx.client();
          const found = await (verb === "pause" ? client.schedules.pause(id) : verb === "resume" ? client.schedules.resume(id) : client.schedules.delete(id));
          if (!found) throw new CliError("SCHEDULE_NOT_FOUND", `no schedule ${id}`);
          ctx.done({ id, [done]: true }, `${done} schedule ${id}`);
        }),
      );
  }
}

function schedulesTable(c: Colors, list: readonly ScheduleInfo[], now: number): string {
  const rows = list.map((s) => [
    s.id,
    s.paused ? c.yellow("paused") : c.green("active"),
    s.spec.cron !== undefined ? `cron ${s.spec.cron}${s.spec.timezone === "UTC" ? "" : ` (${s.spec.timezone})`}` : `every ${duration(s.spec.every)}`,
    s.queue,
    s.agent,
    s.nextTickAt === undefined ? "-" : ago(s.nextTickAt, now),
    s.lastTickAt === undefined ? "-" : ago(s.lastTickAt, now),
    s.lastTaskId ?? "-",
    `${s.fired}/${s.skipped}/${s.missed}`,
  ]);
  const columns = [
    { header: "SCHEDULE" },
    { header: "STATE" },
    { header: "WHEN" },
    { header: "QUEUE" },
    { header: "AGENT" },
    { header: "NEXT" },
    { header: "LAST" },
    { header: "LAST TASK" },
    { header: "FIRED/SKIPPED/MISSED", align: "right" as const },
  ];
  return table(c, columns, rows, "no schedules");
}
