import type { Context, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "./context.ts";
import { GatewayError, GatewayErrorCodes } from "./errors.ts";
import type { TokenSigner } from "./scoped-tokens.ts";
import { ANONYMOUS_ADMIN, mayTouchQueue, type Role, roleAtLeast, scopedPrincipal, type TokenTable } from "./tokens.ts";

/**
 * Sets the request's principal from its token: a configured one in `Authorization: Bearer`, or a
 * scoped one (minted by `POST /v1/tokens`) there or in `?token=` (an EventSource cannot set
 * headers; a configured token is never taken from the address, where logs keep it). 401 without
 * one, with one that is not configured, or with a scoped token that is tampered, signed by an
 * unknown key, or expired (`TOKEN_EXPIRED`). With no tokens configured, authentication is off.
 */
export function authenticate(tokens: TokenTable, signer: TokenSigner): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    if (!tokens.enabled) {
      c.set("principal", ANONYMOUS_ADMIN);
      return next();
    }
    const header = c.req.header("authorization");
    const bearer = header === undefined ? undefined : /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    const fromQuery = header === undefined ? c.req.query("token") : undefined;
    const presented = bearer ?? fromQuery;
    const configured = bearer === undefined ? undefined : tokens.lookup(bearer);
    if (configured) {
      c.set("principal", configured);
      return next();
    }
    if (presented !== undefined && signer.enabled) {
      const verdict = signer.verify(presented);
      if ("scopes" in verdict) {
        c.set("principal", scopedPrincipal(verdict.scopes));
        return next();
      }
      if (verdict.refused === "expired") refuse(c, GatewayErrorCodes.TOKEN_EXPIRED, `the token ${verdict.why}: ask for a new one`);
      if (fromQuery !== undefined || presented.split(".").length === 3) refuse(c, GatewayErrorCodes.UNAUTHORIZED, `invalid token: ${verdict.why}`);
    }
    refuse(c, GatewayErrorCodes.UNAUTHORIZED, presented === undefined ? "send Authorization: Bearer <token>" : "unknown token");
  };
}

function refuse(c: Context<GatewayEnv>, code: string, message: string): never {
  // RFC 6750: a 401 names the scheme it wants.
  c.header("WWW-Authenticate", `Bearer realm="flotilla"${code === GatewayErrorCodes.TOKEN_EXPIRED ? ', error="invalid_token"' : ""}`);
  throw new GatewayError(code, message);
}

/**
 * 403 unless the caller's role is `role` or above (read < submit < admin). A scoped token has no
 * role: it passes only routes given `scope`, when it holds the scope that names what the request
 * touches (`read:task:<id>`, …).
 */
export function requireRole(role: Role, scope?: (c: Context<GatewayEnv>) => string): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const { role: have, scopes } = c.get("principal");
    if (scopes !== undefined) {
      const needed = scope?.(c);
      if (needed === undefined) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, "a scoped token may not use this route");
      if (!scopes.has(needed)) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, `the token's scopes do not include ${needed}`);
      return next();
    }
    if (!roleAtLeast(have, role)) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, `this needs the ${role} role; the token has ${have}`);
    return next();
  };
}

/** The scope a scoped token needs to read the task of the route's `{id}`. */
export const readTaskScope = (c: Context<GatewayEnv>): string => `read:task:${c.req.param("id")}`;

/** Whether the caller holds a scoped token (which names what it may touch, queues aside). */
export const isScoped = (c: Context<GatewayEnv>): boolean => c.get("principal").scopes !== undefined;

/** 403 unless the caller may touch `queue` (a scoped token passed its route's scope check: its scope names the task). */
export function assertQueue(c: Context<GatewayEnv>, queue: string): void {
  if (isScoped(c)) return;
  if (!mayTouchQueue(c.get("principal"), queue)) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, `the token may not touch queue "${queue}"`);
}

/** 403 unless the token may touch every queue: graph runs and topics span queues (a run's nodes and a topic's subscribers are on many). */
export function assertAllQueues(c: Context<GatewayEnv>): void {
  if (c.get("principal").queues !== "*") throw new GatewayError(GatewayErrorCodes.FORBIDDEN, "graph runs and topics need a token for every queue");
}

/** Whether the caller may touch `queue` (for filtering lists). */
export function mayTouch(c: Context<GatewayEnv>, queue: string): boolean {
  return mayTouchQueue(c.get("principal"), queue);
}
