import type { LogFields, Logger } from "@flotilla/core";

/** JSON lines on stdout, as the worker app logs: one object per line, errors with their message and stack. */
export function jsonLog(service: string): Logger {
  const write = (level: string, msg: string, fields: LogFields = {}) => {
    const out: Record<string, unknown> = { time: new Date().toISOString(), level, service, msg };
    for (const [key, value] of Object.entries(fields)) out[key] = value instanceof Error ? { message: value.message, stack: value.stack } : value;
    process.stdout.write(`${JSON.stringify(out)}\n`);
  };
  return {
    debug: (msg, fields) => write("debug", msg, fields),
    info: (msg, fields) => write("info", msg, fields),
    warn: (msg, fields) => write("warn", msg, fields),
    error: (msg, fields) => write("error", msg, fields),
  };
}
