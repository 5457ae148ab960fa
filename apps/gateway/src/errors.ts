import { ErrorCodes, FlotillaError, ValidationError } from "@flotilla/core";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";

/** Codes of the gateway's own errors (HTTP concerns no Flotilla package has). */
export const GatewayErrorCodes = {
  UNAUTHORIZED: "UNAUTHORIZED",
  /** A scoped token past its expiry: mint a new one. */
  TOKEN_EXPIRED: "TOKEN_EXPIRED",
  FORBIDDEN: "FORBIDDEN",
  NOT_FOUND: "NOT_FOUND",
  /** `POST /v1/tokens` on a gateway with no signing keys. */
  SCOPED_TOKENS_OFF: "SCOPED_TOKENS_OFF",
  /** A bus topic nobody published to or subscribed (@flotilla/core has no code for it: the bus itself never refuses an unknown topic). */
  TOPIC_NOT_FOUND: "TOPIC_NOT_FOUND",
  UNSUPPORTED_MEDIA_TYPE: "UNSUPPORTED_MEDIA_TYPE",
  INTERNAL: "INTERNAL_ERROR",
} as const;

/** An error of the HTTP layer; a FlotillaError so that one table maps every code to its status. */
export class GatewayError extends FlotillaError {}

/**
 * Every error code's HTTP status, in one table. Codes not listed are 500: they are failures of a
 * task or of the fleet that an API caller cannot fix by changing the request.
 */
export const ERROR_STATUS: Readonly<Record<string, ContentfulStatusCode>> = {
  [ErrorCodes.VALIDATION]: 400,
  [GatewayErrorCodes.UNAUTHORIZED]: 401,
  [GatewayErrorCodes.TOKEN_EXPIRED]: 401,
  [GatewayErrorCodes.FORBIDDEN]: 403,
  [ErrorCodes.TASK_NOT_FOUND]: 404,
  [ErrorCodes.DEAD_LETTER_NOT_FOUND]: 404,
  [ErrorCodes.RUN_NOT_FOUND]: 404,
  [ErrorCodes.TEMPLATE_NOT_FOUND]: 404,
  [ErrorCodes.INVALID_GRAPH]: 400,
  [GatewayErrorCodes.TOPIC_NOT_FOUND]: 404,
  [ErrorCodes.SUBSCRIPTION_NOT_FOUND]: 404,
  [GatewayErrorCodes.NOT_FOUND]: 404,
  [GatewayErrorCodes.SCOPED_TOKENS_OFF]: 404,
  [ErrorCodes.WAIT_TIMEOUT]: 408,
  [ErrorCodes.DUPLICATE_TASK]: 409,
  [ErrorCodes.NOT_WAITING]: 409,
  // A message to a task that has ended: the request was fine, the task's state conflicts with it.
  [ErrorCodes.NOT_RUNNING]: 409,
  // `GET /v1/tasks/{id}/result` of a task that ended without a result: the request was fine, the task's state conflicts with it.
  [ErrorCodes.TASK_FAILED]: 409,
  [ErrorCodes.TASK_CANCELLED]: 409,
  [ErrorCodes.PAYLOAD_TOO_LARGE]: 413,
  // A bus event's payload over the bus's maxPayloadBytes (1 MiB): the body limit is a little more, so the bus is the one to refuse it.
  [ErrorCodes.EVENT_TOO_LARGE]: 413,
  [GatewayErrorCodes.UNSUPPORTED_MEDIA_TYPE]: 415,
  [ErrorCodes.REDIS_UNAVAILABLE]: 503,
  // 503, not 507: a full Redis is a temporary condition of the service, and clients retry a 503.
  [ErrorCodes.REDIS_FULL]: 503,
  [ErrorCodes.CLOSED]: 503,
  // The task exists on the master, not yet on enough replicas (a durable submit): the caller may look it up and retry.
  [ErrorCodes.NOT_REPLICATED]: 503,
};

export interface ErrorBody {
  error: { code: string; message: string; field?: string; details?: Record<string, unknown> };
}

/** What an error becomes on the wire: its status from ERROR_STATUS, and `{ error: { code, message, field? } }`. */
export function errorResponse(err: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  const flotilla = asFlotillaError(err);
  const status = ERROR_STATUS[flotilla.code] ?? 500;
  const body: ErrorBody = { error: { code: flotilla.code, message: flotilla.message } };
  if (flotilla instanceof ValidationError) body.error.field = flotilla.field;
  const details = publicDetails(flotilla);
  if (details) body.error.details = details;
  return { status, body };
}

/** Hono's own exceptions (malformed JSON, a body over the limit, a wrong content type) as Flotilla errors. */
function asFlotillaError(err: unknown): FlotillaError {
  if (err instanceof FlotillaError) return err;
  if (err instanceof HTTPException) {
    if (err.status === 400) return ValidationError.of("request", "body", err.message || "malformed JSON");
    if (err.status === 413) return new GatewayError(ErrorCodes.PAYLOAD_TOO_LARGE, err.message);
    if (err.status === 415) return new GatewayError(GatewayErrorCodes.UNSUPPORTED_MEDIA_TYPE, "send the body as application/json");
    if (err.status === 401) return new GatewayError(GatewayErrorCodes.UNAUTHORIZED, err.message);
    if (err.status === 404) return new GatewayError(GatewayErrorCodes.NOT_FOUND, err.message);
  }
  // Anything else is a bug or an outage: its message may say more than a caller should see.
  return new GatewayError(GatewayErrorCodes.INTERNAL, "internal error");
}

/** Details a caller can use: a failed task's recorded error, validation issues, a signal's state, the dead letters a partly failed republish did publish. Never causes or stacks. */
function publicDetails(err: FlotillaError): Record<string, unknown> | undefined {
  const d = err.details;
  if (!d) return undefined;
  const picked: Record<string, unknown> = {};
  for (const key of ["issues", "taskError", "status", "waitingFor", "taken", "republished"]) if (d[key] !== undefined) picked[key] = d[key];
  return Object.keys(picked).length > 0 ? picked : undefined;
}
