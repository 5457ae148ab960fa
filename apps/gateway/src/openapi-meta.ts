import { z } from "@hono/zod-openapi";

interface Metadata {
  description?: string;
  example?: unknown;
  param?: { name: string; in: "path" | "query" | "header" };
  /** Replaces the generated alternatives (see json-value-openapi.ts). */
  anyOf?: unknown[];
}

/**
 * `schema.openapi(...)` for a schema made before @hono/zod-openapi was loaded (every schema of
 * @flotilla/core, whichever module a program imports first): zod copies its methods onto each schema
 * when it is made, so those schemas lack the `openapi` method the extension adds later. Calling it
 * from the prototype works on any of them, and returns a copy, as `.openapi()` does.
 */
export function withOpenApi<S extends z.ZodType>(schema: S, refIdOrMetadata: string | Metadata, metadata?: Metadata): S {
  const openapi = (z.ZodType.prototype as unknown as { openapi: (...args: unknown[]) => S }).openapi;
  return metadata === undefined ? openapi.call(schema, refIdOrMetadata) : openapi.call(schema, refIdOrMetadata, metadata);
}
