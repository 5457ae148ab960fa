// `flotilla queues`: every queue's depth and what its tasks came to lately.
import type { QueueOverview } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer } from "../args.ts";
import type { Context } from "../context.ts";
import { type Colors, duration, table } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

export function registerQueues(program: Command, ctx: Context): void {
  program
    .command("queues")
    .description("per queue: waiting by lane, in flight, delayed, dead, oldest wait, recent outcomes, live workers serving it")
    .addOption(new Option("--window <ms>", "how far back recent outcomes count").argParser(integer(1000)).default(60_000))
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: { window: number; watch?: number }) => {
        await show(
          ctx,
          async () => {
            const queues = await ctx.client().fleet.queues({ windowMs: flags.window });
            return { json: { queues }, text: () => queuesTable(ctx.colors, queues, flags.window) };
          },
          flags.watch,
        );
      }),
    );
}

function queuesTable(c: Colors, queues: readonly QueueOverview[], windowMs: number): string {
  const n = (v: number, bad = false) => (v > 0 && bad ? c.red(String(v)) : String(v));
  const rows = queues.map((q) => [
    q.queue,
    String(q.waiting),
    `${q.lanes.high}/${q.lanes.normal}/${q.lanes.low}`,
    String(q.inFlight),
    String(q.delayed),
    n(q.dead, true),
    q.waiting > 0 ? duration(q.oldestWaitMs) : "-",
    c.green(String(q.recent.completed)),
    n(q.recent.failed, true),
    String(q.recent.cancelled),
    String(q.recent.retried),
    q.waitP95Ms === undefined ? "-" : duration(q.waitP95Ms),
    // No worker serves it: what waits there never starts (said in red when something waits).
    q.workers === 0 && q.waiting + q.delayed > 0 ? c.red("0") : String(q.workers),
  ]);
  const r = "right" as const;
  const columns = [
    { header: "QUEUE" },
    { header: "WAITING", align: r },
    { header: "HIGH/NORMAL/LOW", align: r },
    { header: "IN FLIGHT", align: r },
    { header: "DELAYED", align: r },
    { header: "DEAD", align: r },
    { header: "OLDEST WAIT", align: r },
    { header: "COMPLETED", align: r },
    { header: "FAILED", align: r },
    { header: "CANCELLED", align: r },
    { header: "RETRIED", align: r },
    { header: "WAIT P95", align: r },
    { header: "WORKERS", align: r },
  ];
  const body = table(c, columns, rows, "no queues (nothing was submitted under this prefix)");
  return queues.length ? `${body}${c.dim(`completed, failed, cancelled, retried, wait p95: the last ${duration(windowMs)}`)}\n` : body;
}
