import { Cluster, type ClusterOptions, Redis, type RedisOptions } from "ioredis";
import { type ExponentialBackoff, exponentialDelay } from "../backoff.ts";
import { ConnectionError, ErrorCodes, FlotillaError, isRedisFull, LifecycleError, RedisFullError } from "../errors.ts";
import { asCluster, type ClusterConnection, isClusterConnection, seedNodes } from "./cluster.ts";
import { explainConnectionError } from "./connection-errors.ts";
import { checkRedisConnection, type Environment, redisFromEnv } from "./environment.ts";
import { checkSentinelConnection, describeSentinel, isSentinelConnection, reconnectAfterGivingUp, sentinelDefaults } from "./sentinel.ts";

/**
 * An ioredis client from any copy of ioredis 5 or 6, told apart from options by what it has, not by
 * `instanceof Redis` (see `isRedisClient`). Typed loosely so an application's own ioredis 5 client
 * is accepted as it is.
 */
export interface RedisClientLike {
  readonly status: string;
  duplicate(...args: never[]): unknown;
  defineCommand(...args: never[]): unknown;
  sendCommand(...args: never[]): unknown;
}

/**
 * A URL with ioredis options beside it, for what a URL cannot say: `{ url: "rediss://host:6380",
 * tls: { ca } }` (a CA, a client certificate). What the URL names wins over the same option.
 */
export type RedisUrlOptions = RedisOptions & { url: string };

/**
 * How to reach Redis: a URL (`redis://`, `rediss://` for TLS), ioredis options (Sentinel's
 * `{ sentinels: [{ host, port }], name }` among them), a URL with options (`{ url, tls }`), an
 * existing ioredis client or Cluster (never closed by us, from ioredis 5 or 6), or a Redis Cluster's
 * seed nodes (`{ cluster: ["host:port", …] }`).
 * Unset: the cluster `REDIS_CLUSTER_NODES` names, else `REDIS_URL`, else redis://127.0.0.1:6379. A URL
 * of another scheme (`http://…`) is a ValidationError naming where it came from.
 */
export type RedisConnection = string | RedisOptions | RedisUrlOptions | Redis | Cluster | RedisClientLike | ClusterConnection;

/** `durable`: a connection of a client's own for durable submits' replica checks (WAIT blocks it). */
export type ConnectionRole = "command" | "blocking" | "subscriber" | "durable";

export interface ConnectionPolicy {
  /**
   * Fail commands quickly with a ConnectionError while Redis is unreachable (clients) instead of
   * queueing them until it returns (workers, which must ride out a Redis restart).
   * @default false
   */
  failFast?: boolean;
  /** @default 5000 */
  connectTimeoutMs?: number;
  /** Where an unset connection is read from (REDIS_CLUSTER_NODES, REDIS_URL). @default process.env */
  env?: Environment;
}

/**
 * How long a connection being thrown away (`disconnect()`) may take to close its socket before it is
 * destroyed. ioredis waits 2 s, on a timer that keeps the process alive after everything is closed.
 */
const DISCONNECT_TIMEOUT_MS = 0;

/** Pause before trying Redis again (a reconnect, a re-subscription) after failure number 1, 2, …: 100 ms, doubling, at most 2 s. */
export const RECONNECT_BACKOFF: ExponentialBackoff = { baseMs: 50, maxMs: 2000 };

/** A connection we opened (and must close) or one the caller lent us (and must not). */
export interface OwnedRedis {
  redis: Redis;
  owned: boolean;
}

/**
 * Opens a connection for one role. Blocking, subscriber and durable roles always get their own
 * socket, because a blocked or subscribed connection cannot serve other commands.
 *
 * Through Sentinel, the connection follows a failover by itself (see `sentinelDefaults`).
 *
 * A Redis Cluster comes back as an ioredis Cluster typed as `Redis`: every command Flotilla sends
 * names keys of one slot (scripts, pipelines of one queue or task), which a Cluster routes like a
 * single Redis would answer it. The few questions about the whole data set (INFO, SCAN) go to
 * `everyMaster()`; a cluster's subscriber uses sharded Pub/Sub, one connection per master.
 */
export function openRedis(conn: RedisConnection | undefined, role: ConnectionRole, policy: ConnectionPolicy = {}): OwnedRedis {
  const failFast = policy.failFast ?? false;
  const tuned: RedisOptions = {
    connectTimeout: policy.connectTimeoutMs ?? 5000,
    // null = retry forever: workers and subscribers must survive a Redis restart.
    maxRetriesPerRequest: failFast && role !== "blocking" ? 2 : null,
    retryStrategy: (times) => exponentialDelay(RECONNECT_BACKOFF, times),
    enableReadyCheck: true,
    disconnectTimeout: DISCONNECT_TIMEOUT_MS,
    connectionName: `flotilla:${role}`,
  };
  if (conn === undefined) {
    const { connection, source } = redisFromEnv(policy.env);
    const opened = openRedis(connection, role, policy);
    sources.set(opened.redis, source === "the default" ? "the default: no redis option, REDIS_URL unset" : source);
    return opened;
  }
  checkRedisConnection(conn);
  const lentCluster = asCluster(conn);
  if (lentCluster) return openCluster(lentCluster, role, tuned, failFast);
  if (isClusterConnection(conn)) return openCluster(conn, role, tuned, failFast);
  let redis: Redis;
  if (isRedisClient(conn)) {
    // A client of another ioredis copy answers the calls we make the same way (RESP2 shapes under ioredis 6's default mapping).
    const client = conn as Redis;
    if (role === "command") return { redis: client, owned: false };
    redis = client.duplicate({ ...tuned });
  } else if (typeof conn === "string") {
    redis = new Redis(conn, tuned);
  } else {
    redis = fromOptions(conn as RedisOptions | RedisUrlOptions, tuned, failFast);
  }
  if (failFast) boundReady(redis, tuned.connectTimeout ?? 5000);
  if (failFast && isSentinelConnection(redis.options)) {
    // Paused as long as the longest reconnect pause.
    reconnectAfterGivingUp(redis, () => closing.has(redis), exponentialDelay(RECONNECT_BACKOFF, Number.POSITIVE_INFINITY));
  }
  keepLastError(redis);
  return { redis, owned: true };
}

/** A connection from ioredis options, or from a URL with options. */
function fromOptions(conn: RedisOptions | RedisUrlOptions, tuned: RedisOptions, failFast: boolean): Redis {
  const { url, ...options } = conn as Partial<RedisUrlOptions>;
  let defaults: RedisOptions = {};
  if (isSentinelConnection(options)) {
    checkSentinelConnection(options);
    defaults = sentinelDefaults(Boolean(options.tls) || /^rediss:/i.test(url ?? ""), failFast, RECONNECT_BACKOFF);
  }
  const given: RedisOptions = { ...tuned, ...defaults, ...options };
  return url === undefined ? new Redis(given) : new Redis(url, given);
}

/** Connections `closeRedis` closed: they stay closed. */
const closing = new WeakSet<Redis>();

/** Which setting named the Redis of a connection opened without one (REDIS_URL, the default…), for messages. */
const sources = new WeakMap<Redis, string>();

/**
 * The last error of each connection we opened, until it is ready again. A command that fails for
 * want of a connection only says it ran out of retries; this says why there was none.
 */
const lastErrors = new WeakMap<Redis, Error>();

/** ioredis's error after a round of sentinels that named no master: each sentinel's own error, just before it, says more. */
const SENTINEL_ROUND = /^All sentinels are unreachable/;

function keepLastError(redis: Redis): void {
  // A duplicate of a lent client is whatever its copy of ioredis makes: only listen where it can be.
  if (typeof redis.on !== "function") return;
  redis.on("sentinelError", (err: Error) => lastErrors.set(redis, err));
  redis.on("error", (err: Error) => {
    if (!(SENTINEL_ROUND.test(err.message) && lastErrors.has(redis))) lastErrors.set(redis, err);
  });
  redis.on("ready", () => lastErrors.delete(redis));
}

/** The error in words an operator can act on (a missing CA or client certificate, an unknown master name). */
function explain(redis: Redis, err: Error): string {
  const o = redis.options;
  const tls = o?.tls;
  return explainConnectionError(err, {
    tls: Boolean(tls),
    clientCertificate: typeof tls === "object" && Boolean(tls.cert),
    ...(o?.sentinels && o.name && { sentinelName: o.name }),
  });
}

/** A Cluster for one role, from seed nodes or a lent Cluster (used as it is for commands, never closed). */
function openCluster(conn: ClusterConnection | Cluster, role: ConnectionRole, tuned: RedisOptions, failFast: boolean): OwnedRedis {
  const shardedSubscribers = role === "subscriber";
  if (!isClusterConnection(conn)) {
    if (role === "command") return { redis: conn as unknown as Redis, owned: false };
    return { redis: conn.duplicate(undefined, { shardedSubscribers }) as unknown as Redis, owned: true };
  }
  const given: ClusterOptions = conn.options ?? {};
  const options: ClusterOptions = {
    enableReadyCheck: true,
    // Keep trying the whole cluster as a single Redis is kept trying; clients give up after a few.
    clusterRetryStrategy: (times) => (failFast && times > 3 ? null : exponentialDelay(RECONNECT_BACKOFF, times)),
    // A failover moves slots for a second or two: wait it out rather than fail the command.
    retryDelayOnClusterDown: 200,
    retryDelayOnFailover: 200,
    retryDelayOnTryAgain: 200,
    ...given,
    shardedSubscribers,
    redisOptions: { ...withoutRetryStrategy(tuned), ...given.redisOptions },
  };
  return { redis: new Cluster(seedNodes(conn), options) as unknown as Redis, owned: true };
}

/** A cluster's node connections reconnect by the cluster's own strategy, not a single Redis's. */
function withoutRetryStrategy(options: RedisOptions): ClusterOptions["redisOptions"] {
  const { retryStrategy: _unused, ...rest } = options;
  return rest;
}

/**
 * ioredis's `connectTimeout` ends at the TCP connect: a server that accepts the connection and never
 * answers (a hung Redis, a wrong port) would hold a fail-fast connection in its ready check, and every
 * command in the offline queue, for ever. Past `ms` without ready, the connection is dropped and tried
 * again, so queued commands fail after `maxRetriesPerRequest` tries like any unreachable Redis.
 */
function boundReady(redis: Redis, ms: number): void {
  let timer: NodeJS.Timeout | undefined;
  redis.on("connect", () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (redis.status === "connect") redis.disconnect(true);
    }, ms);
    timer.unref();
  });
  for (const settled of ["ready", "end"]) redis.on(settled, () => clearTimeout(timer));
}

/**
 * True for an ioredis client, false for options. By shape: a client from another copy of ioredis (an
 * application on ioredis 5, or its own install of 6) is no `instanceof` ours, and spread as options
 * it would silently become a new default connection.
 */
export function isRedisClient(conn: unknown): conn is RedisClientLike {
  if (typeof conn !== "object" || conn === null) return false;
  const c = conn as Record<string, unknown>;
  return typeof c.status === "string" && typeof c.duplicate === "function" && typeof c.defineCommand === "function" && typeof c.sendCommand === "function";
}

export async function closeRedis(conn: OwnedRedis | undefined): Promise<void> {
  if (!conn?.owned) return;
  const r = conn.redis;
  closing.add(r);
  if (r.status === "end") return;
  try {
    if (r.status === "ready") await r.quit();
    else disconnectRedis(r);
  } catch {
    disconnectRedis(r);
  }
}

/** What `disconnectRedis` reaches into: ioredis's own way of ending a connection, for the state its disconnect() leaves open. */
interface Ending {
  setStatus?: (status: string) => void;
  flushQueue?: (error: Error) => void;
  reconnectTimeout?: NodeJS.Timeout | null;
}

/**
 * Ends a connection now, whatever its state, failing the commands it holds. Use it instead of
 * ioredis's `disconnect()`, which, on a connection waiting to reconnect (Redis unreachable), only
 * cancels the next attempt: ioredis ends a connection when its socket closes, and that socket has
 * closed already, so the commands queued meanwhile wait for ever (a `close()` awaiting one never
 * returns, while the connection keeps nothing alive), and a standalone connection arms a 2 s timer to
 * destroy that socket, which holds the process. A Cluster with no node connection is in the same
 * state. Such a connection is ended here as ioredis's own close handler would have.
 */
export function disconnectRedis(redis: Redis): void {
  closing.add(redis);
  if (redis.status === "end") return;
  const ending = redis as unknown as Ending;
  const canEnd = typeof ending.setStatus === "function" && typeof ending.flushQueue === "function";
  const cluster = asCluster(redis);
  if (cluster) {
    redis.disconnect();
    // A Cluster ends when its last node connection closes: with none (closed while it still resolved
    // its seeds, or between two tries), no close event comes to end it and fail what it holds, and the
    // connect under way goes on (on a cluster, a Bus closed at once never let its process exit).
    // (Read again: disconnect() may have ended it.)
    if (canEnd && (redis.status as string) !== "end" && cluster.nodes("all").length === 0) end(ending);
    return;
  }
  if (redis.status !== "reconnecting" || !canEnd) {
    redis.disconnect();
    return;
  }
  // disconnect() here would only arm that timer.
  end(ending);
}

/** Ends a connection as ioredis's own close handler does: no next try, status "end", every queued command failed. */
function end(ending: Ending): void {
  clearTimeout(ending.reconnectTimeout ?? undefined);
  ending.reconnectTimeout = null;
  ending.setStatus!("end");
  ending.flushQueue!(new Error("Connection is closed."));
}

export function describeRedis(redis: Redis): string {
  const cluster = asCluster(redis);
  if (cluster) {
    const nodes = cluster.nodes("master").map((n) => `${n.options.host ?? "127.0.0.1"}:${n.options.port ?? 6379}`);
    return nodes.length ? `the cluster of ${nodes.join(",")}` : "the cluster";
  }
  const o = redis.options;
  if (o.sentinels?.length) return describeSentinel(o);
  return o.path ? o.path : `${o.host ?? "127.0.0.1"}:${o.port ?? 6379}`;
}

// The last line: a Redis Cluster in the middle of a failover (a master gone, its slots not yet
// served by the replica taking over) answers with redirections ioredis gives up on, or CLUSTERDOWN.
const CONNECTION_FAILURE =
  /ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection is closed|max retries per request|Stream isn't writeable|connect ETIMEDOUT|All sentinels are unreachable|Too many Cluster redirections|CLUSTERDOWN|TRYAGAIN|Failed to refresh slots cache|None of startup nodes is available/i;

/** True for errors that mean "Redis could not be reached", as opposed to a command's own error. */
export function isConnectionFailure(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  if (err.name === "MaxRetriesPerRequestError") return true;
  return CONNECTION_FAILURE.test(err.message) || CONNECTION_FAILURE.test(String((err as { code?: string }).code));
}

/**
 * A connection failure as a typed ConnectionError, Redis refusing a write at its maxmemory as a
 * RedisFullError; any other error as it was.
 */
export function translateRedisError(redis: Redis, err: unknown): unknown {
  if (err instanceof FlotillaError) return err;
  if (isRedisFull(err)) {
    const command = (err as { command?: { name?: string } }).command?.name;
    return new RedisFullError(`${command ? `${command.toUpperCase()} ` : "a write "}to Redis at ${describeRedis(redis)}`, err);
  }
  if (!isConnectionFailure(err)) return err;
  const where = `Redis at ${describeRedis(redis)}${sources.has(redis) ? ` (${sources.get(redis)})` : ""}`;
  if (CLOSED.test((err as Error).message) && closing.has(redis)) {
    return new LifecycleError(ErrorCodes.CLOSED, `the connection to ${where} was closed (by close()) before the command was answered`);
  }
  return new ConnectionError(`${where} is unreachable: ${reasonOf(redis, err as Error)}`, err);
}

const CLOSED = /^Connection is closed/;

/**
 * Why a command found no connection, in Flotilla's words: the connection's last error (refused, a
 * DNS name that does not resolve, TLS…) rather than ioredis's "max retries per request" notice,
 * which names an option Flotilla sets itself.
 */
function reasonOf(redis: Redis, err: Error): string {
  const gaveUp = err.name === "MaxRetriesPerRequestError" || MAX_RETRIES.test(err.message);
  const last = lastErrors.get(redis);
  const why = last && last !== err ? explain(redis, last) : undefined;
  if (gaveUp) return why ?? "no connection could be made";
  if (CLOSED.test(err.message)) return `the connection was lost before the command was answered${why ? ` (${why})` : ""}`;
  return why && !err.message.includes(last!.message) ? `${why}; ${err.message}` : err.message;
}

const MAX_RETRIES = /max retries per request/i;

/** Runs a Redis operation, turning connection failures into a typed ConnectionError. */
export async function withRedis<T>(redis: Redis, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    throw translateRedisError(redis, err);
  }
}

/** Resolves once the connection is ready, or rejects with a ConnectionError after `timeoutMs`. */
export function whenReady(redis: Redis, timeoutMs: number): Promise<void> {
  if (redis.status === "ready") return Promise.resolve();
  return new Promise((resolve, reject) => {
    let lastError: unknown;
    const onError = (err: unknown) => {
      lastError = err;
    };
    const done = (err?: unknown) => {
      clearTimeout(timer);
      redis.off("ready", onReady);
      redis.off("error", onError);
      if (err) reject(err);
      else resolve();
    };
    const onReady = () => done();
    const timer = setTimeout(() => {
      const why = lastError instanceof Error ? `: ${explain(redis, lastError)}` : "";
      done(new ConnectionError(`Redis at ${describeRedis(redis)} did not answer within ${timeoutMs} ms${why}`, lastError));
    }, timeoutMs);
    redis.on("ready", onReady);
    redis.on("error", onError);
  });
}
