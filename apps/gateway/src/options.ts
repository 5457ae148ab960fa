import type { AlertRule, AlertThresholds, FlotillaClient } from "@flotilla/client";
import { DEFAULTS, type Logger, silentLogger } from "@flotilla/core";
import { type RedisConnection, resolvePrefix } from "@flotilla/core/redis";
import type { SigningKey } from "./scoped-tokens.ts";
import type { TokenRule } from "./tokens.ts";

/** The alert rules the gateway runs (see `GatewayOptions.alerts`). */
export interface GatewayAlertOptions {
  /** How often the rules are evaluated. @default 15_000 */
  intervalMs?: number;
  /** The default rules' thresholds. @default the defaults of `defaultRules` */
  thresholds?: AlertThresholds;
  /** Rules instead of the default ones. @default defaultRules(thresholds) */
  rules?: AlertRule[];
  /** URLs each alert event is POSTed to (JSON, retried with backoff). @default [] */
  webhooks?: readonly string[];
}

/** What `createGateway` accepts; every field is optional. */
export interface GatewayOptions {
  /** Redis URL (or connection options) of the fleet. @default process.env.REDIS_URL ?? "redis://127.0.0.1:6379" (the client's default) */
  redis?: RedisConnection;
  /** Key prefix shared with the workers. @default the given `client`'s, else FLOTILLA_PREFIX, else "flotilla" (as every entry point) */
  prefix?: string;
  /**
   * A client to use instead of one made from `redis` and `prefix` (the gateway then leaves closing it
   * to you). @default a new FlotillaClient, closed by `close()`
   */
  client?: FlotillaClient;
  /** Port `start()` listens on; 0 picks a free one. @default 8080 */
  port?: number;
  /** Address `start()` binds. Loopback by default so nothing is exposed by accident: give "0.0.0.0" in a container. @default "127.0.0.1" */
  host?: string;
  /** Bearer tokens and what each may do. None: authentication is off (every request is an admin on every queue). @default [] */
  tokens?: readonly TokenRule[];
  /**
   * Keys of the scoped tokens `POST /v1/tokens` mints for browsers (`{ id, secret }`, a secret of 32
   * characters or more): the first signs, every one is accepted, so a rotation puts the new key first
   * and removes the old one a day later (the longest a token lives). @default []: no scoped tokens
   */
  signingKeys?: readonly SigningKey[];
  /** Origins allowed to call the API from a browser ("*" for any). @default []: no CORS headers are sent */
  corsOrigins?: readonly string[];
  /** Largest request body accepted; a bigger one is a 413. @default 1_114_112 (the client's 1 MiB payload limit plus 64 KiB for the envelope) */
  bodyLimitBytes?: number;
  /** An idle event stream gets a `: ping` comment line this often, so proxies keep it open. @default 15_000 */
  heartbeatMs?: number;
  /** How long `GET /v1/tasks/{id}/result` waits when the request gives no `timeoutMs`. @default 30_000 */
  resultTimeoutMs?: number;
  /** The longest `timeoutMs` a result request may ask for. @default 300_000 */
  maxResultTimeoutMs?: number;
  /** `/readyz` reports not ready when Redis has not answered within this long. @default 2_000 */
  readyTimeoutMs?: number;
  /** Where unexpected errors (the 500s) and stream failures are reported. @default silentLogger */
  logger?: Logger;
  /** Signed tasks: every task submitted through the gateway is signed with this secret (the workers' first `signingSecrets`). @default undefined: unsigned */
  signingSecret?: string;
  /**
   * A folder of static files (the built `@flotilla/dashboard`: `apps/dashboard/dist`) served at `/`,
   * without authentication (the API under `/v1` keeps its own). @default undefined: no dashboard
   */
  dashboardDir?: string;
  /**
   * Alert rules run from `start()` to `close()`: the events go to the fleet's alert stream (what
   * `GET /v1/alerts`, `flotilla alerts` and the dashboard read), the log, and `webhooks`. Any number
   * of gateways may run them: one evaluates at a time (a lease in Redis), and a restart or hand-over
   * neither repeats an alert nor forgets to resolve one. `false`: no rules run here.
   * @default {} (the default rules, among them `no_worker_alive`, every 15 s)
   */
  alerts?: GatewayAlertOptions | false;
}

export type ResolvedGatewayOptions = Required<Omit<GatewayOptions, "redis" | "client" | "signingSecret" | "dashboardDir">> &
  Pick<GatewayOptions, "redis" | "client" | "signingSecret" | "dashboardDir">;

/** The client's largest payload (agent + input) plus room for `options` and the JSON around them. */
export const DEFAULT_BODY_LIMIT_BYTES = DEFAULTS.maxPayloadBytes + 64 * 1024;

/** The one place the gateway's defaults are applied. */
export function resolveGatewayOptions(options: GatewayOptions = {}): ResolvedGatewayOptions {
  return {
    redis: options.redis,
    client: options.client,
    signingSecret: options.signingSecret,
    dashboardDir: options.dashboardDir,
    // The rule of every entry point (FLOTILLA_PREFIX), and a given client's own prefix before it: the
    // bus the gateway makes must be on the client's keys.
    prefix: options.prefix ?? options.client?.keys.prefix ?? resolvePrefix(undefined),
    port: options.port ?? 8080,
    host: options.host ?? "127.0.0.1",
    tokens: options.tokens ?? [],
    signingKeys: options.signingKeys ?? [],
    corsOrigins: options.corsOrigins ?? [],
    bodyLimitBytes: options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    resultTimeoutMs: options.resultTimeoutMs ?? 30_000,
    maxResultTimeoutMs: options.maxResultTimeoutMs ?? 300_000,
    readyTimeoutMs: options.readyTimeoutMs ?? 2_000,
    logger: options.logger ?? silentLogger,
    alerts: options.alerts ?? {},
  };
}
