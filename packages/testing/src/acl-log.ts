import type { Redis } from "ioredis";

/**
 * What a server's ACL refused since its log was last reset (`ACL LOG`), one line per entry:
 * `<user>: <reason> <object> (<context>)`. A test run as least-privilege users expects none, even
 * where the code only logs a refusal (a heartbeat, a gauge).
 */
export async function aclRefusals(admin: Redis): Promise<string[]> {
  const log = (await admin.call("ACL", "LOG")) as unknown[][];
  return log.map((entry) => {
    const e: Record<string, unknown> = {};
    for (let i = 0; i + 1 < entry.length; i += 2) e[String(entry[i])] = entry[i + 1];
    return `${e.username}: ${e.reason} ${e.object} (${e.context})`;
  });
}
