// What a failure looks like from outside: one line on stderr, and the exit code.
import { ErrorCodes, FlotillaError } from "@flotilla/core";

/** The exit codes, stable: scripts match on them. */
export const EXIT = {
  /** It did what was asked. */
  OK: 0,
  /** It could not: an unknown id, Redis down, an operation refused, a followed task that failed. */
  FAILURE: 1,
  /** The command line was wrong (commander's verdict, or an argument that does not parse). */
  USAGE: 2,
  /** A `stream` (or `submit --follow`) stopped by Ctrl-C before the task ended. */
  INTERRUPTED: 130,
} as const;

/** A failure the command reports itself (exit 1 unless told otherwise), with a code like FlotillaError's. */
export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;

  constructor(code: string, message: string, exitCode: number = EXIT.FAILURE) {
    super(message);
    this.name = "CliError";
    this.code = code;
    this.exitCode = exitCode;
  }
}

/** A command line that does not make sense (exit 2). */
export class UsageError extends CliError {
  constructor(message: string) {
    super("USAGE", message, EXIT.USAGE);
    this.name = "UsageError";
  }
}

/** Only the first line, with what ioredis appends about its retries left out. */
const oneLine = (text: string): string => (text.split("\n")[0] ?? "").replace(/; Reached the max retries per request limit.*$/, "").trim();

/**
 * The line an error is reported with (without the `error: ` in front) and the exit code. FlotillaErrors
 * keep their message (their `code` is stable, the message is for people), shortened where the CLI
 * knows better what to say: an unknown task is `no task <id>`, Redis down names the Redis.
 */
export function describeError(err: unknown, redisLabel: string): { message: string; code: string; exitCode: number } {
  if (err instanceof CliError) return { message: oneLine(err.message), code: err.code, exitCode: err.exitCode };
  if (err instanceof FlotillaError) {
    const taskId = (err as { taskId?: unknown }).taskId;
    if (err.code === ErrorCodes.TASK_NOT_FOUND && typeof taskId === "string") return { message: `no task ${taskId}`, code: err.code, exitCode: EXIT.FAILURE };
    if (err.code === ErrorCodes.REDIS_UNAVAILABLE) {
      return { message: `cannot reach Redis (${redisLabel}): ${oneLine(err.message)}`, code: err.code, exitCode: EXIT.FAILURE };
    }
    return { message: oneLine(err.message), code: err.code, exitCode: EXIT.FAILURE };
  }
  const message = err instanceof Error ? err.message || err.name : String(err);
  return { message: oneLine(message), code: "ERROR", exitCode: EXIT.FAILURE };
}
