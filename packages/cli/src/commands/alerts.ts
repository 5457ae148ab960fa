// `flotilla alerts`: the alerts firing now (their figures as of the rules' last round) and the latest
// alert events, as the alert sink keeps them.
import type { FleetClient } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer } from "../args.ts";
import type { Context } from "../context.ts";
import { ago, alertFigure, type Colors, table } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

type Alerts = Awaited<ReturnType<FleetClient["alerts"]>>;
type AlertEvent = Alerts["events"][number];

export function registerAlerts(program: Command, ctx: Context): void {
  program
    .command("alerts")
    .description("alerts firing now, and the recent alert events (newest first)")
    .addOption(new Option("-n, --count <n>", "recent events to read").argParser(integer(1, 10_000)).default(20))
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: { count: number; watch?: number }) => {
        await show(
          ctx,
          async () => {
            const alerts = await ctx.client().fleet.alerts({ count: flags.count });
            return { json: alerts, text: () => alertsText(ctx.colors, alerts, Date.now()) };
          },
          flags.watch,
        );
      }),
    );
}

function alertsText(c: Colors, { firing, events }: Alerts, now: number): string {
  const severity = (e: AlertEvent) => (e.severity === "critical" ? c.red(e.severity) : c.yellow(e.severity));
  const firingRows = firing.map((e) => [
    e.rule,
    e.queue,
    severity(e),
    ago(e.since, now),
    `${alertFigure(e.rule, e.value)} / ${alertFigure(e.rule, e.threshold)}`,
    e.message,
  ]);
  const eventRows = events.map((e) => [ago(e.at, now), e.state === "firing" ? c.red("firing") : c.green("resolved"), e.rule, e.queue, severity(e), e.message]);
  return [
    c.bold("firing"),
    table(
      c,
      [{ header: "RULE" }, { header: "QUEUE" }, { header: "SEVERITY" }, { header: "SINCE" }, { header: "VALUE / THRESHOLD" }, { header: "MESSAGE" }],
      firingRows,
      "no alert is firing",
    ),
    c.bold("recent events"),
    table(
      c,
      [{ header: "AT" }, { header: "STATE" }, { header: "RULE" }, { header: "QUEUE" }, { header: "SEVERITY" }, { header: "MESSAGE" }],
      eventRows,
      "no alert events",
    ),
  ].join("\n");
}
