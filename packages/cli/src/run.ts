// One run of the command line, in or out of process: parse, act, report, and the exit code.
import { type Command, CommanderError } from "commander";
import { type CliIo, Context } from "./context.ts";
import { describeError, EXIT } from "./errors.ts";
import type { GlobalFlags } from "./options.ts";
import { buildProgram } from "./program.ts";

/** Commander's own exits: help and version asked for are 0, anything else it refuses is a usage error. */
const COMMANDER_OK: ReadonlySet<string> = new Set(["commander.helpDisplayed", "commander.version"]);

/**
 * Runs `flotilla <argv>` (the arguments after the command's name) and resolves with its exit code
 * (see EXIT): output goes to `io.stdout`, errors as one line to `io.stderr`. It never exits the
 * process and never rejects; the client it opened is closed before it resolves.
 */
export async function run(argv: readonly string[], io: CliIo): Promise<number> {
  let program: Command | undefined;
  const ctx = new Context(io, () => program?.opts<GlobalFlags>() ?? {});
  try {
    program = buildProgram(ctx);
    await program.parseAsync([...argv], { from: "user" });
    return ctx.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) return COMMANDER_OK.has(err.code) ? EXIT.OK : EXIT.USAGE;
    const { message, exitCode } = describeError(err, ctx.globals.redisLabel);
    io.stderr.write(`${ctx.ce.red("error:")} ${message}\n`);
    return exitCode;
  } finally {
    await ctx.close();
  }
}
