import { splitTaskId } from "@flotilla/core";
import { createRoute, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { GatewayApp, GatewayDeps, GatewayEnv } from "../context.ts";
import { GatewayError, GatewayErrorCodes } from "../errors.ts";
import { DEFAULT_TOKEN_TTL_SECONDS, MAX_TOKEN_TTL_SECONDS, ScopeSchema } from "../scoped-tokens.ts";
import { mayTouchQueue, type Role, roleAtLeast } from "../tokens.ts";
import { AUTH_ERRORS, error, json, jsonBody, SECURED } from "./responses.ts";

const TokenRequestSchema = z
  .object({
    scopes: z
      .array(ScopeSchema.openapi({ example: "read:task:default/01JXAMPLE" }))
      .min(1)
      .max(32)
      .openapi({ description: "What the token may do: `read:task:<queue>/<name>`, `read:thread:<id>`, `write:thread:<id>`." }),
    ttlSeconds: z
      .number()
      .int()
      .min(1)
      .max(MAX_TOKEN_TTL_SECONDS)
      .optional()
      .openapi({ description: `How long it lives. Default ${DEFAULT_TOKEN_TTL_SECONDS} (15 minutes), at most ${MAX_TOKEN_TTL_SECONDS} (a day).` }),
  })
  .strict()
  .openapi("TokenRequest");

const TokenSchema = z
  .object({
    token: z.string().openapi({ description: "Send it as `Authorization: Bearer <token>`, or as `?token=` where headers cannot be set (EventSource)." }),
    expiresAt: z.number().int().openapi({ description: "When it expires (ms since the epoch): a 401 TOKEN_EXPIRED after." }),
    scopes: z.array(z.string()),
  })
  .openapi("ScopedToken");

const mint = createRoute({
  operationId: "mintToken",
  method: "post",
  path: "/v1/tokens",
  tags: ["tokens"],
  summary: "Mint a short-lived scoped token (for a browser)",
  description:
    "Signed by the gateway's first signing key (HMAC-SHA256, the key's id in the token), so any gateway with the key accepts it and nothing is stored. Only a configured token may mint, and only what it may do itself: `read:task:<id>` needs the read role and the task's queue, `read:thread:<id>` the read role on every queue, `write:thread:<id>` the submit role on every queue.",
  ...SECURED,
  request: { body: jsonBody(TokenRequestSchema) },
  responses: {
    201: json("The token.", TokenSchema),
    ...AUTH_ERRORS,
    404: error("Scoped tokens are off: the gateway has no signing keys (SCOPED_TOKENS_OFF)."),
  },
});

/** The role and queues a configured token needs to grant `scope`. */
function needs(scope: string): { role: Role; queue: string | "*" } {
  const [verb, kind, ...rest] = scope.split(":");
  const id = rest.join(":");
  if (kind === "task") return { role: "read", queue: splitTaskId(id).queue };
  return { role: verb === "write" ? "submit" : "read", queue: "*" };
}

function assertMayGrant(c: Context<GatewayEnv>, scopes: readonly string[]): void {
  const principal = c.get("principal");
  if (principal.scopes !== undefined) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, "a scoped token may not mint tokens");
  for (const scope of scopes) {
    const { role, queue } = needs(scope);
    const queueOk = queue === "*" ? principal.queues === "*" : mayTouchQueue(principal, queue);
    if (!roleAtLeast(principal.role, role) || !queueOk) {
      const what = queue === "*" ? "every queue" : `queue "${queue}"`;
      throw new GatewayError(GatewayErrorCodes.FORBIDDEN, `granting ${scope} needs the ${role} role on ${what}; this token may not do it itself`);
    }
  }
}

export function registerTokenRoutes(app: GatewayApp, { signer }: GatewayDeps): void {
  app.openapi(mint, async (c) => {
    const { scopes, ttlSeconds = DEFAULT_TOKEN_TTL_SECONDS } = c.req.valid("json");
    assertMayGrant(c, scopes);
    if (!signer.enabled) {
      throw new GatewayError(GatewayErrorCodes.SCOPED_TOKENS_OFF, "scoped tokens are off: give the gateway signing keys (FLOTILLA_GATEWAY_SIGNING_KEYS)");
    }
    const unique = [...new Set(scopes)];
    const { token, expiresAt } = signer.mint(unique, ttlSeconds);
    return c.json({ token, expiresAt, scopes: unique }, 201);
  });
}
