import { readFileSync } from "node:fs";

/** This app's version, from its package.json (one folder up from src/ and from dist/ alike), for `--version`. */
export function appVersion(): string {
  try {
    return (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: string }).version ?? "unknown";
  } catch {
    return "unknown";
  }
}
