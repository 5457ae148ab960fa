import type { LogFields, Logger } from "@flotilla/core";

export { type LogFields, type Logger, silentLogger } from "@flotilla/core";

/** One JSON object per line on stdout: `{"level","time","msg",...fields}`. */
export function jsonLogger(base: LogFields = {}, level: "debug" | "info" | "warn" | "error" = "info"): Logger {
  const order = ["debug", "info", "warn", "error"];
  const min = order.indexOf(level);
  const write = (lvl: string) => (msg: string, fields?: LogFields) => {
    if (order.indexOf(lvl) < min) return;
    const line = { level: lvl, time: new Date().toISOString(), msg, ...base, ...fields };
    process.stdout.write(`${JSON.stringify(line, (_k, v) => (v instanceof Error ? { message: v.message, name: v.name } : v))}\n`);
  };
  return { debug: write("debug"), info: write("info"), warn: write("warn"), error: write("error") };
}
