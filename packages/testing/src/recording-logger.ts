import type { LogFields, Logger } from "@flotilla/core";

/** One line a RecordingLogger was given. */
export interface LoggedLine {
  level: "debug" | "info" | "warn" | "error";
  message: string;
  fields: LogFields | undefined;
}

/** A Logger that keeps every line it is given, for tests that assert what was logged. */
export function recordingLogger(): { log: Logger; lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const at =
    (level: LoggedLine["level"]) =>
    (message: string, fields?: LogFields): void =>
      void lines.push({ level, message, fields });
  return { log: { debug: at("debug"), info: at("info"), warn: at("warn"), error: at("error") }, lines };
}
