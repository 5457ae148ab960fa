// `flotilla stream <id>`: a task's events, those already published then live, until it ends.
import type { FlotillaEvent, TaskStatus, UnservedNotice } from "@flotilla/client";
import { type Command, Option } from "commander";
import { integer, taskId } from "../args.ts";
import type { Context } from "../context.ts";
import { CliError, EXIT } from "../errors.ts";
import { brief } from "../format.ts";

export function registerStream(program: Command, ctx: Context): void {
  program
    .command("stream")
    .description("replay a task's events and follow them until it ends (text as plain text; --json: one event per line)")
    .argument("<id>", "the task id (<queue>/<name>; a bare name is in queue default)", taskId)
    .addOption(new Option("--after <seq>", "start after this event seq (the last one seen)").argParser(integer(0)).default(0))
    .action(ctx.action(async (id: string, flags: { after: number }) => followTask(ctx, id, flags.after)));
}

type Ended = "COMPLETED" | "FAILED" | "CANCELLED";
const ENDED: Readonly<Record<string, Ended>> = { completed: "COMPLETED", failed: "FAILED", cancelled: "CANCELLED" };

/**
 * Prints the task's events from `after` until its terminal status event: under `--json` each event
 * as a line of JSON, else the text deltas on stdout as they come and the rest as notes on stderr.
 * Returns the exit code: 0 when it COMPLETED, 130 when Ctrl-C stopped it first; throws (exit 1)
 * when it FAILED or was CANCELLED, with its error.
 */
export async function followTask(ctx: Context, id: string, after: number): Promise<number> {
  const handle = ctx.client().handle(id);
  // One plain read first: an unknown task or an unreachable Redis fails at once, before any subscription.
  await handle.status();
  const printer = new EventPrinter(ctx);
  let ended: { status: Ended; error?: { code: string; message: string } | undefined } | undefined;
  const stream = handle.stream({ after, ...(ctx.signal && { signal: ctx.signal }), onUnserved: (n) => ctx.note(ctx.ce.yellow(unservedLine(n))) });
  for await (const event of stream) {
    if (ctx.json) ctx.printJson(event);
    else printer.print(event);
    if (event.type === "status" && ENDED[event.status]) ended = { status: ENDED[event.status]!, error: event.error };
  }
  printer.finish();
  if (!ended) {
    if (ctx.signal?.aborted) return EXIT.INTERRUPTED;
    // Its end was before `after`, or its events expired: the record says how it ended.
    const record = await handle.status();
    if (!isEnded(record.status)) throw new CliError("STREAM_ENDED", `the event stream of task ${id} ended while it is ${record.status}`);
    ended = { status: record.status, error: record.error };
  }
  const why = ended.error ? `: [${ended.error.code}] ${ended.error.message}` : "";
  if (ended.status === "FAILED") throw new CliError("TASK_FAILED", `task ${id} failed${why}`);
  if (ended.status === "CANCELLED") throw new CliError("TASK_CANCELLED", `task ${id} was cancelled${why}`);
  return EXIT.OK;
}

/** Said once on stderr (under --json too: stdout stays the events) while the follow goes on waiting. */
export function unservedLine(n: UnservedNotice): string {
  const fleet = n.liveWorkers === 0 ? "no worker is alive" : `${n.liveWorkers} live worker${n.liveWorkers === 1 ? " serves" : "s serve"} other queues`;
  return `no worker serves queue "${n.queue}" (${fleet}); still waiting for task ${n.taskId}: start one with \`flotilla-worker --queues ${n.queue}\``;
}

const isEnded = (s: TaskStatus): s is Ended => s === "COMPLETED" || s === "FAILED" || s === "CANCELLED";

/** Human output of a stream: the answer's text on stdout, what happens around it on stderr. */
class EventPrinter {
  private readonly ctx: Context;
  /** Whether stdout is at the start of a line (nothing printed, or the text ended with a newline). */
  private atLineStart = true;

  constructor(ctx: Context) {
    this.ctx = ctx;
  }

  print(e: FlotillaEvent): void {
    if (e.type === "text") {
      this.ctx.print(e.delta);
      if (e.delta.length > 0) this.atLineStart = e.delta.endsWith("\n");
      return;
    }
    const line = this.describe(e);
    if (line === undefined) return;
    // On a terminal the notes and the text share the screen: a note starts on a line of its own.
    if (!this.atLineStart && this.ctx.io.stdout.isTTY) {
      this.ctx.print("\n");
      this.atLineStart = true;
    }
    this.ctx.note(line);
  }

  /** Ends the text with a newline, so the shell's prompt starts on a line of its own. */
  finish(): void {
    if (!this.atLineStart) this.ctx.print("\n");
    this.atLineStart = true;
  }

  private describe(e: FlotillaEvent): string | undefined {
    const c = this.ctx.ce;
    switch (e.type) {
      case "status": {
        const tag = `[${e.status}]`;
        if (e.status === "running") return c.cyan(`${tag} attempt ${e.attempt}${e.workerId ? ` on ${e.workerId}` : ""}`);
        if (e.status === "waiting" && e.waiting) {
          const tool = e.waiting.tool ? ` before ${e.waiting.tool} ${brief(e.waiting.args ?? {}, 120)}` : "";
          return c.yellow(`${tag} for signal "${e.waiting.name}"${tool}`);
        }
        if (e.status === "pending" && e.signal) return c.dim(`${tag} resumed by signal "${e.signal}"`);
        if (e.status === "completed") return c.green(tag);
        if (e.error) return (e.status === "failed" ? c.red : c.yellow)(`${tag} [${e.error.code}] ${e.error.message}`);
        return c.dim(tag);
      }
      case "tool_call":
        return c.dim(`→ ${e.name} ${brief(e.args, 120)}`);
      case "tool_result":
        return (e.isError ? c.red : c.dim)(`← ${e.name}: ${brief(e.result, 120)}`);
      case "progress":
        return c.dim(`… ${e.name}: ${brief(e.data, 120)}`);
      case "user-message":
        return c.cyan(`» user: ${brief(e.content, 120)}`);
      case "handoff":
        return c.dim(`handoff ${e.from} → ${e.to}${e.reason ? `: ${e.reason}` : ""}`);
      case "error":
        return c.red(`error [${e.code}] ${e.message}`);
      case "custom":
        return c.dim(`${e.name}: ${brief(e.data, 120)}`);
      case "usage":
        return c.dim(`usage: ${brief({ inputTokens: e.inputTokens, outputTokens: e.outputTokens }, 120)}`);
      default:
        return undefined; // steps: the text and tool lines already tell them
    }
  }
}
