// `flotilla tasks` (list) and `flotilla task <id>` (one record).
import type { TaskResult, TaskStatus } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer, oneOf, TASK_STATUSES, taskId, watchInterval } from "../args.ts";
import type { Context } from "../context.ts";
import { brief, type Colors, duration, fields, status, table, time } from "../format.ts";
import { show } from "../view.ts";

interface TasksFlags {
  queue?: string;
  status?: TaskStatus;
  limit: number;
  cursor?: string;
  watch?: number;
}

export function registerTasks(program: Command, ctx: Context): void {
  program
    .command("tasks")
    .description("list tasks, newest first")
    .option("-q, --queue <queue>", "only this queue")
    .addOption(new Option("-s, --status <status>", `only this status (${TASK_STATUSES.join(", ")})`).argParser(oneOf(TASK_STATUSES)))
    .addOption(new Option("-n, --limit <n>", "at most this many").argParser(integer(1, 1000)).default(50))
    .option("--cursor <cursor>", "the page after this one (a listing's nextCursor)")
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: TasksFlags) => {
        const options = { limit: flags.limit, queue: flags.queue, status: flags.status, cursor: flags.cursor };
        await show(
          ctx,
          async () => {
            const page = await ctx.client().listTasks(options);
            return { json: page, text: () => tasksTable(ctx.colors, page.tasks, page.nextCursor) };
          },
          flags.watch,
        );
      }),
    );

  program
    .command("task")
    .description("show a task: status, attempts, worker, error, timings, result, what it waits for")
    .argument("<id>", "the task id (<queue>/<name>; a bare name is in queue default)", taskId)
    .action(
      ctx.action(async (id: string) => {
        const record = await ctx.client().handle(id).status();
        await show(ctx, async () => ({ json: record, text: () => taskDetails(ctx.colors, record) }));
      }),
    );
}

/** `--watch [ms]`, on every listing command. */
export function watchOption(): Option {
  return new Option("-w, --watch [ms]", "redraw every ms (default 2000) until Ctrl-C").argParser(watchInterval).preset(true);
}

function tasksTable(c: Colors, tasks: readonly TaskResult[], nextCursor: string | undefined): string {
  const rows = tasks.map((t) => [
    t.taskId,
    status(c, t.status),
    t.agent,
    t.inputPreview === undefined ? "-" : brief(t.inputPreview, 30),
    String(t.attempt),
    `${t.retries}/${t.maxRetries}`,
    t.workerId ?? "-",
    time(t.createdAt),
    t.durationMs === undefined ? "-" : duration(t.durationMs),
    t.error ? brief(`[${t.error.code}] ${t.error.message}`, 50) : "",
  ]);
  const header = [
    { header: "TASK" },
    { header: "STATUS" },
    { header: "AGENT" },
    { header: "INPUT" },
    { header: "ATTEMPT", align: "right" as const },
    { header: "RETRIES", align: "right" as const },
    { header: "WORKER" },
    { header: "CREATED" },
    { header: "TOOK", align: "right" as const },
    { header: "ERROR" },
  ];
  const more = nextCursor ? c.dim(`more: --cursor ${nextCursor}\n`) : "";
  return table(c, header, rows, "no tasks") + more;
}

export function taskDetails(c: Colors, t: TaskResult): string {
  const w = t.waiting;
  const waiting: Array<readonly [string, string | undefined]> =
    t.status === "WAITING" && w
      ? [
          ["waiting for", `signal "${w.name}" (${w.kind})`] as const,
          ["tool", w.tool === undefined ? undefined : `${w.tool} ${brief(w.args ?? {}, 200)}`] as const,
          ["request", w.request === undefined ? undefined : brief(w.request, 200)] as const,
          ["times out", w.timeoutAt === undefined ? undefined : `${time(w.timeoutAt)} (then ${w.onTimeout})`] as const,
        ]
      : [];
  const pairs: Array<readonly [string, string | undefined]> = [
    ["task", c.bold(t.taskId)],
    ["status", status(c, t.status)],
    ["agent", t.agent],
    ["input", t.inputPreview],
    ["queue", t.queue],
    ["priority", t.priority],
    ["attempt", String(t.attempt)],
    ["retries", `${t.retries}/${t.maxRetries}`],
    ["worker", t.workerId],
    ["created", time(t.createdAt)],
    ["run at", t.runAt === undefined ? undefined : time(t.runAt)],
    ["started", t.startedAt === undefined ? undefined : time(t.startedAt)],
    ["waited", t.waitMs === undefined ? undefined : duration(t.waitMs)],
    ["ended", t.completedAt === undefined ? undefined : time(t.completedAt)],
    ["took", t.durationMs === undefined ? undefined : duration(t.durationMs)],
    ["next try", t.status === "RETRYING" && t.retryAt !== undefined ? time(t.retryAt) : undefined],
    ["timeout", t.timeoutMs === undefined ? undefined : duration(t.timeoutMs)],
    ["cancel", t.cancelRequestedAt === undefined ? undefined : `requested ${time(t.cancelRequestedAt)}${t.cancelReason ? `: ${t.cancelReason}` : ""}`],
    ["error", t.error ? c.red(`[${t.error.code}] ${t.error.message}`) : undefined],
    ...waiting,
    ["usage", t.usage ? brief(t.usage, 200) : undefined],
    ["metadata", Object.keys(t.metadata).length ? brief(t.metadata, 200) : undefined],
  ];
  const result = t.result === undefined ? "" : `\n${c.dim("result:")}\n${resultText(t.result)}\n`;
  return fields(c, pairs) + result;
}

/** A result for people: an agent's answer (`text`, and its `output` when it has a schema) as it is, anything else as JSON. */
function resultText(result: unknown): string {
  if (result && typeof result === "object" && "text" in result && typeof (result as { text: unknown }).text === "string") {
    const { text, output } = result as { text: string; output?: unknown };
    return output === undefined ? text : `${text}\n${JSON.stringify(output, null, 2)}`;
  }
  return JSON.stringify(result, null, 2);
}
