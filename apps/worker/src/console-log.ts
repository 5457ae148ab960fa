import { format } from "node:util";
import type { Logger } from "@flotilla/worker";

/**
 * Sends what libraries print with `console.*` (ioredis's "[WARN] … a password was supplied", an
 * unhandled-error notice) and Node's process warnings through the JSON logger, so the worker's
 * output stays one JSON object per line, also where stdout and stderr are read as one stream
 * (docker logs, kubectl logs).
 */
export function routeConsoleToLog(log: Logger): void {
  const to =
    (level: keyof Logger) =>
    (...args: unknown[]) =>
      log[level](format(...args), { source: "console" });
  console.log = to("info");
  console.info = to("info");
  console.debug = to("debug");
  console.warn = to("warn");
  console.error = to("error");
  // Node prints warnings to stderr through its own listener; ours replaces it.
  process.removeAllListeners("warning");
  process.on("warning", (warning) => {
    const code = (warning as { code?: string }).code;
    log.warn(warning.message, { source: "process", warning: warning.name, ...(code && { code }) });
  });
}
