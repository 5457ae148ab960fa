import type { LogFields, Logger } from "@flotilla/core";

export { type LogFields, type Logger, silentLogger } from "@flotilla/core";

/**
 * Set once stdout has failed (its reader went away: EPIPE). A process whose log reader died keeps
 * running and draining; its log lines have nowhere to go, so they are dropped rather than crash it
 * (an 'error' on stdout with no listener is an uncaught exception).
 */
let stdoutGone = false;
let guarded = false;

function guardStdout(): void {
  if (guarded) return;
  guarded = true;
  process.stdout.on("error", () => {
    stdoutGone = true;
  });
}

/** One JSON object per line on stdout: `{"level","time","msg",...fields}`; nothing once stdout is closed. */
export function jsonLogger(base: LogFields = {}, level: "debug" | "info" | "warn" | "error" = "info"): Logger {
  const order = ["debug", "info", "warn", "error"];
  const min = order.indexOf(level);
  guardStdout();
  const write = (lvl: string) => (msg: string, fields?: LogFields) => {
    if (order.indexOf(lvl) < min || stdoutGone || process.stdout.destroyed) return;
    const line = { level: lvl, time: new Date().toISOString(), msg, ...base, ...fields };
    process.stdout.write(`${JSON.stringify(line, (_k, v) => (v instanceof Error ? { message: v.message, name: v.name } : v))}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}
