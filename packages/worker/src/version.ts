import { readFileSync } from "node:fs";

/** The version of @flotilla/worker, from its package.json (one folder up from src/ and from dist/ alike), for the heartbeat. */
export const WORKER_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
})();
