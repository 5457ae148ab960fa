import type { z } from "@hono/zod-openapi";
import { ErrorSchema } from "../schemas.ts";

/** A JSON response of `schema` for a route's `responses`. */
export const json = <S extends z.ZodType>(description: string, schema: S) => ({ description, content: { "application/json": { schema } } });

/** A JSON request body of `schema`. */
export const jsonBody = <S extends z.ZodType>(schema: S, required = true) => ({ content: { "application/json": { schema } }, required });

const error = (description: string) => json(description, ErrorSchema);

/** The error responses every authenticated route may give. */
export const AUTH_ERRORS = {
  400: error("A parameter or the body failed validation (`error.field` names it)."),
  401: error("No bearer token, or one that is not configured."),
  403: error("The token's role or queues do not allow this."),
  503: error("Redis is unreachable (or full)."),
} as const;

export const NOT_FOUND = { 404: error("No such task (never submitted, or expired), or no such dead letter.") } as const;

export { error };

/** What every /v1 route declares for the OpenAPI document. */
export const SECURED = { security: [{ bearer: [] }] };
