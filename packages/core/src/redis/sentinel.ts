// Redis Sentinel: how a connection through one is asked for (ioredis's own `{ sentinels, name }`
// options), what Flotilla checks and tunes on it, and how it is named in errors.
import type { Redis, RedisOptions } from "ioredis";
import { type ExponentialBackoff, exponentialDelay } from "../backoff.ts";
import { ValidationError } from "../errors.ts";

type SentinelList = NonNullable<RedisOptions["sentinels"]>;

/** ioredis options that reach the master through Sentinel: `{ sentinels: [{ host, port }, …], name: "mymaster", … }`. */
export type SentinelConnection = RedisOptions & { sentinels: SentinelList };

/** True for options that name sentinels. */
export function isSentinelConnection(conn: unknown): conn is SentinelConnection {
  return typeof conn === "object" && conn !== null && Array.isArray((conn as { sentinels?: unknown }).sentinels);
}

/**
 * Refuses what ioredis would take and then fail on, or take silently wrong: no sentinel, no master
 * name (ioredis throws a plain Error), or the replica role (Flotilla writes on every path).
 */
export function checkSentinelConnection(conn: SentinelConnection): void {
  const what = "Redis Sentinel connection";
  if (conn.sentinels.length === 0) throw ValidationError.of(what, "sentinels", "names no sentinel");
  if (typeof conn.name !== "string" || conn.name === "") throw ValidationError.of(what, "name", "must be the master's name, as the sentinels monitor it");
  if (conn.role !== undefined && conn.role !== "master") throw ValidationError.of(what, "role", 'must be "master": Flotilla writes on every path');
}

/** A READONLY reply: the connection reached a replica (the old master, demoted). */
const READONLY = /\bREADONLY\b/;

/** Rounds of asking every sentinel a fail-fast connection makes before its queued commands fail (as maxRetriesPerRequest: 2). */
const FAIL_FAST_ROUNDS = 3;

/** What Flotilla sets on a Sentinel connection unless the options say otherwise. */
export function sentinelDefaults(tls: boolean, failFast: boolean, backoff: ExponentialBackoff): RedisOptions {
  return {
    // On SENTINEL's +switch-master, drop the connection and ask the sentinels again at once. Without
    // it, a connection stays on the old master until Sentinel makes it a replica, about ten seconds
    // later, and whatever was written there meanwhile is lost when it resyncs from the new master.
    failoverDetector: true,
    // A connection that still reaches the old master once it is a replica reconnects (through the
    // sentinels) and resends the command: a replica refuses every write, so none was half done.
    reconnectOnError: (err) => (READONLY.test(err.message) ? 2 : false),
    // ioredis would otherwise connect to the master in plain text whatever `tls` says.
    ...(tls && { enableTLSForSentinelMode: true }),
    // ioredis asks the sentinels round after round inside one connect, so while none of them names
    // a master (all unreachable, or the name unknown) no reconnect is counted and a command would
    // wait for ever. A fail-fast connection gives up after a few rounds instead: its queued commands
    // fail, and `reconnectAfterGivingUp` starts over.
    ...(failFast && { sentinelRetryStrategy: (times: number) => (times >= FAIL_FAST_ROUNDS ? null : exponentialDelay(backoff, times)) }),
  };
}

/**
 * A Sentinel connection that gave up (see `sentinelDefaults`) ends, and ioredis never connects it
 * again; this does, after a pause, until `closed()` says it was closed on purpose. Meanwhile its
 * commands fail at once ("Connection is closed"), as a fail-fast connection's should.
 */
export function reconnectAfterGivingUp(redis: Redis, closed: () => boolean, pauseMs: number): void {
  redis.on("end", () => {
    if (closed()) return;
    setTimeout(() => {
      if (!closed() && redis.status === "end") redis.connect().catch(() => {}); // failures are the connection's "error" events
    }, pauseMs).unref();
  });
}

/** `the master "mymaster" of the sentinels h1:p1,h2:p2`, for errors and logs. */
export function describeSentinel(options: { name?: string | null; sentinels?: SentinelList | null }): string {
  const list = (options.sentinels ?? []).map((s) => `${s.host ?? "127.0.0.1"}:${s.port ?? 26379}`).join(",");
  return `the master "${options.name ?? ""}" of the sentinels ${list}`;
}
