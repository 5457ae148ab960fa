import { checkJsonDepth, DEFAULTS, ValidationError } from "@flotilla/core";
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "./context.ts";

/**
 * Refuses a JSON body nested deeper than the client allows before any schema walks it: zod and the
 * OpenAPI validator recurse per level, and a few thousand levels would overflow the stack (a 500).
 * The envelope adds two levels (`{ "input": … }`); the client then checks each part precisely.
 * Every route with a JSON body has it.
 */
export const jsonDepthGuard: MiddlewareHandler<GatewayEnv> = async (c, next) => {
  if (/^application\/(.+\+)?json/i.test(c.req.header("content-type") ?? "")) {
    const text = await c.req.text(); // cached: the validator and the handler parse the same text
    // An empty body sent with a JSON content type (curl -H … -X POST) reads as `{}`: routes whose body
    // is optional then take it as absent, and a required one names its missing fields.
    // (Hono keeps each body read as a promise in bodyCache, typed as its value.)
    if (text.trim() === "") (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve("{}");
    else {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw ValidationError.of("body", "body", "is not valid JSON");
      }
      checkJsonDepth(body, DEFAULTS.maxJsonDepth + 2, "body");
    }
  }
  return next();
};
