// @flotilla/cli: the `flotilla` command (bin/flotilla.mjs), and `run()` to run it in process.
export type { CliIo } from "./context.ts";
export { CliError, EXIT, UsageError } from "./errors.ts";
export type { OutputStream } from "./format.ts";
export { type GlobalFlags, type GlobalOptions, resolveGlobals } from "./options.ts";
export { run } from "./run.ts";
