// The request body limit. A body over it is still read to its end (up to a bound), and only then
// refused: a client that streams its body and reads the answer once it has sent it all (node:http
// piping a file, most SDKs) never reads a 413 sent mid-body, because the server closes the connection
// while the client is still writing (EPIPE). Hono's own limit answers at once, and the Node adapter
// then cuts the connection after 500 ms of draining.
import { ErrorCodes } from "@flotilla/core";
import type { MiddlewareHandler } from "hono";
import type { GatewayEnv } from "./context.ts";
import { GatewayError } from "./errors.ts";

/** A refused body is read this far at most… */
export const DRAIN_MAX_BYTES = 64 * 1024 * 1024;
/** …for this long at most; past either, the 413 goes out with `Connection: close` (its sender may miss it). */
export const DRAIN_MAX_MS = 30_000;

/** Buffers a body of up to `maxBytes` for the routes; a bigger one is read on (bounded) and refused with a 413. */
export function bodyLimit(maxBytes: number): MiddlewareHandler<GatewayEnv> {
  return async (c, next) => {
    const body = c.req.raw.body;
    if (!body) return next();
    const reader = body.getReader();
    const declared = Number(c.req.header("content-length"));
    if (!(declared > maxBytes)) {
      const chunks: Uint8Array[] = [];
      let size = 0;
      for (;;) {
        const { done, value } = await reader.read();
        if (done) {
          c.req.raw = new Request(c.req.raw, { body: Buffer.concat(chunks, size) });
          return next();
        }
        size += value.length;
        if (size > maxBytes) break;
        chunks.push(value);
      }
    }
    if (!(await drain(reader))) c.header("Connection", "close");
    throw new GatewayError(ErrorCodes.PAYLOAD_TOO_LARGE, `the request body is over ${maxBytes} bytes`);
  };
}

/** Reads the rest of a body and drops it; false when it went past DRAIN_MAX_BYTES or DRAIN_MAX_MS first. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<"timeout">((resolve) => {
    timer = setTimeout(resolve, DRAIN_MAX_MS, "timeout");
  });
  let read = 0;
  try {
    for (;;) {
      const next = await Promise.race([reader.read(), timeout]);
      if (next === "timeout") return false;
      if (next.done) return true;
      read += next.value.length;
      if (read > DRAIN_MAX_BYTES) return false;
    }
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
    reader.cancel().catch(() => {});
  }
}
