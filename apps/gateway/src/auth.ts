import type { Context, MiddlewareHandler } from "hono";
import type { GatewayEnv } from "./context.ts";
import { GatewayError, GatewayErrorCodes } from "./errors.ts";
import { ANONYMOUS_ADMIN, mayTouchQueue, type Role, roleAtLeast, type TokenTable } from "./tokens.ts";

/**
 * Sets the request's principal from its `Authorization: Bearer <token>` header: 401 without one or
 * with a token that is not configured. With no tokens configured, authentication is off.
 */
export function authenticate(tokens: TokenTable): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    if (!tokens.enabled) {
      c.set("principal", ANONYMOUS_ADMIN);
      return next();
    }
    const header = c.req.header("authorization") ?? "";
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const principal = match ? tokens.lookup(match[1]!) : undefined;
    if (!principal) {
      // RFC 6750: a 401 names the scheme it wants.
      c.header("WWW-Authenticate", 'Bearer realm="flotilla"');
      throw new GatewayError(GatewayErrorCodes.UNAUTHORIZED, match ? "unknown token" : "send Authorization: Bearer <token>");
    }
    c.set("principal", principal);
    return next();
  };
}

/** 403 unless the caller's role is `role` or above (read < submit < admin). */
export function requireRole(role: Role): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const { role: have } = c.get("principal");
    if (!roleAtLeast(have, role)) throw new GatewayError(GatewayErrorCodes.FORBIDDEN, `this needs the ${role} role; the token has ${have}`);
    return next();
  };
}

/** 403 unless the caller may touch `queue`. */
export function assertQueue(c: Context<GatewayEnv>, queue: string): void {
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
