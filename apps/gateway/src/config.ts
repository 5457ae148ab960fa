import { parseArgs } from "node:util";
import { DEFAULTS, KeyPrefixSchema, parseInput, RedisUrlSchema, ValidationError } from "@flotilla/core";
import { z } from "zod";
import { DEFAULT_BODY_LIMIT_BYTES, type GatewayOptions } from "./options.ts";
import { readSigningKeys } from "./scoped-tokens.ts";
import { readTokenRules } from "./tokens.ts";

export const USAGE = `flotilla-gateway: the HTTP + Server-Sent Events API of a Flotilla fleet

Options (each also read from the environment variable shown):
  --port N               FLOTILLA_GATEWAY_PORT          default 8080
  --host H               FLOTILLA_GATEWAY_HOST          default 127.0.0.1 (0.0.0.0 in a container)
  --redis URL            REDIS_URL                      default ${DEFAULTS.redisUrl}
  --prefix P             FLOTILLA_PREFIX                default ${DEFAULTS.prefix}
  --tokens JSON|FILE     FLOTILLA_GATEWAY_TOKENS        [{"token":"…","role":"read|submit|admin","queues":["q1"]|"*"}],
                                                        or the path of a file holding it (none: no authentication,
                                                        allowed on a loopback host only)
  --signing-keys JSON|FILE FLOTILLA_GATEWAY_SIGNING_KEYS [{"id":"k2","secret":"…"},{"id":"k1","secret":"…"}], or a file:
                                                        keys of the scoped tokens POST /v1/tokens mints for
                                                        browsers; the first signs, every one is accepted
  --cors-origins a,b     FLOTILLA_GATEWAY_CORS_ORIGINS  browser origins allowed ("*": any); default none
  --body-limit BYTES     FLOTILLA_GATEWAY_BODY_LIMIT    default ${DEFAULT_BODY_LIMIT_BYTES}
  --heartbeat-ms MS      FLOTILLA_GATEWAY_HEARTBEAT_MS  default 15000: ": ping" on idle event streams
  --signing-secrets S,…  FLOTILLA_SIGNING_SECRETS       signed tasks: the first signs every task submitted
                                                        (as the workers' list; use the env var)
  --dashboard-dir DIR    FLOTILLA_GATEWAY_DASHBOARD_DIR the built dashboard (apps/dashboard/dist), served at /
                                                        without a token; default none
  --alerts on|off        FLOTILLA_GATEWAY_ALERTS        run the default alert rules (one gateway at a time);
                                                        default on
  --alert-interval-ms MS FLOTILLA_ALERT_INTERVAL_MS     default 15000
  --alert-thresholds J   FLOTILLA_ALERT_THRESHOLDS      JSON, e.g. {"depthCritical":1000,"failureRate":0.2}
  --alert-webhooks a,b   FLOTILLA_ALERT_WEBHOOKS        URLs each alert event is POSTed to
  --help
`;

const csv = (s: string) =>
  s
    .split(",")
    .map((part) => part.trim())
    .filter(Boolean);

const ConfigSchema = z.object({
  port: z.coerce.number().int().min(0).max(65535).default(8080),
  host: z.string().min(1).default("127.0.0.1"),
  redis: RedisUrlSchema.optional(),
  prefix: KeyPrefixSchema.default(DEFAULTS.prefix),
  tokens: z.string().optional(),
  signingKeys: z.string().optional(),
  corsOrigins: z.string().transform(csv).optional(),
  bodyLimitBytes: z.coerce.number().int().positive().optional(),
  heartbeatMs: z.coerce.number().int().min(100).optional(),
  signingSecrets: z
    .string()
    .transform(csv)
    .pipe(z.array(z.string().min(16, "each secret must be at least 16 characters")).min(1))
    .optional(),
  dashboardDir: z.string().min(1).optional(),
  alerts: z.enum(["on", "off"]).default("on"),
  alertIntervalMs: z.coerce.number().int().min(100).optional(),
  alertThresholds: z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "is not JSON" });
        return z.NEVER;
      }
    })
    .pipe(
      z
        .object({
          depthWarning: z.number().int().positive(),
          depthCritical: z.number().int().positive(),
          failureRate: z.number().min(0).max(1),
          failureRateMinSamples: z.number().int().positive(),
          waitP95Ms: z.number().positive(),
          redisMemoryRatio: z.number().positive().max(1),
          noWorkerForMs: z.number().int().min(0),
        })
        .partial()
        .strict(),
    )
    .optional(),
  alertWebhooks: z.string().transform(csv).pipe(z.array(z.url())).optional(),
});

/** Each setting's flag and environment variable. */
const SOURCES: Record<keyof z.input<typeof ConfigSchema>, { flag: string; env: string }> = {
  port: { flag: "port", env: "FLOTILLA_GATEWAY_PORT" },
  host: { flag: "host", env: "FLOTILLA_GATEWAY_HOST" },
  redis: { flag: "redis", env: "REDIS_URL" },
  prefix: { flag: "prefix", env: "FLOTILLA_PREFIX" },
  tokens: { flag: "tokens", env: "FLOTILLA_GATEWAY_TOKENS" },
  signingKeys: { flag: "signing-keys", env: "FLOTILLA_GATEWAY_SIGNING_KEYS" },
  corsOrigins: { flag: "cors-origins", env: "FLOTILLA_GATEWAY_CORS_ORIGINS" },
  bodyLimitBytes: { flag: "body-limit", env: "FLOTILLA_GATEWAY_BODY_LIMIT" },
  heartbeatMs: { flag: "heartbeat-ms", env: "FLOTILLA_GATEWAY_HEARTBEAT_MS" },
  signingSecrets: { flag: "signing-secrets", env: "FLOTILLA_SIGNING_SECRETS" },
  dashboardDir: { flag: "dashboard-dir", env: "FLOTILLA_GATEWAY_DASHBOARD_DIR" },
  alerts: { flag: "alerts", env: "FLOTILLA_GATEWAY_ALERTS" },
  alertIntervalMs: { flag: "alert-interval-ms", env: "FLOTILLA_ALERT_INTERVAL_MS" },
  alertThresholds: { flag: "alert-thresholds", env: "FLOTILLA_ALERT_THRESHOLDS" },
  alertWebhooks: { flag: "alert-webhooks", env: "FLOTILLA_ALERT_WEBHOOKS" },
};

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

/**
 * The gateway's options from flags, then the environment, then defaults (as the worker app reads
 * its own). A flag given empty is refused; an empty environment variable counts as unset. Without
 * tokens only a loopback host is allowed: an unauthenticated API must not be reachable from elsewhere.
 */
export function loadConfig(argv: string[], env: NodeJS.ProcessEnv): GatewayOptions | "help" {
  const flags = Object.fromEntries(Object.values(SOURCES).map(({ flag }) => [flag, { type: "string" as const }]));
  const { values } = parseArgs({ args: argv, options: { ...flags, help: { type: "boolean" } }, strict: true }) as {
    values: Record<string, string | boolean | undefined>;
  };
  if (values.help === true) return "help";
  const merged: Record<string, string> = {};
  for (const [key, { flag, env: envName }] of Object.entries(SOURCES)) {
    const given = values[flag];
    if (given === "") throw ValidationError.of("gateway configuration", key, `--${flag} is empty`);
    const value = typeof given === "string" ? given : env[envName];
    if (value !== undefined && value !== "") merged[key] = value;
  }
  const c = parseInput(ConfigSchema, merged, "gateway configuration");
  const tokens = c.tokens === undefined ? [] : readTokenRules(c.tokens);
  if (tokens.length === 0 && !LOOPBACK.test(c.host)) {
    throw ValidationError.of("gateway configuration", "tokens", `none configured, and host ${c.host} is not loopback: set FLOTILLA_GATEWAY_TOKENS`);
  }
  return {
    port: c.port,
    host: c.host,
    prefix: c.prefix,
    tokens,
    ...(c.signingKeys !== undefined && { signingKeys: readSigningKeys(c.signingKeys) }),
    ...(c.redis !== undefined && { redis: c.redis }),
    ...(c.corsOrigins !== undefined && { corsOrigins: c.corsOrigins }),
    ...(c.bodyLimitBytes !== undefined && { bodyLimitBytes: c.bodyLimitBytes }),
    ...(c.heartbeatMs !== undefined && { heartbeatMs: c.heartbeatMs }),
    ...(c.signingSecrets !== undefined && { signingSecret: c.signingSecrets[0]! }),
    ...(c.dashboardDir !== undefined && { dashboardDir: c.dashboardDir }),
    alerts:
      c.alerts === "off"
        ? false
        : {
            ...(c.alertIntervalMs !== undefined && { intervalMs: c.alertIntervalMs }),
            ...(c.alertThresholds !== undefined && { thresholds: c.alertThresholds }),
            ...(c.alertWebhooks !== undefined && { webhooks: c.alertWebhooks }),
          },
  };
}
