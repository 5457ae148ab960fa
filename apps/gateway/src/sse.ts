import type { Context } from "hono";
import { streamSSE } from "hono/streaming";
import type { GatewayDeps, GatewayEnv } from "./context.ts";
import { errorResponse } from "./errors.ts";

/** One Server-Sent Events message. */
export interface SseMessage {
  id?: string;
  event: string;
  data: string;
}

/**
 * Answers with an event stream of what `source` yields, until it ends, the caller leaves or the
 * gateway closes (`signal` aborts). Sends a `: connected` comment at once (the caller knows the
 * stream is open), a `: ping` after `heartbeatMs` with nothing else sent, and an `error` event if
 * the source fails.
 */
export function pipeSse(
  c: Context<GatewayEnv>,
  { options, metrics, streams }: Pick<GatewayDeps, "options" | "metrics" | "streams">,
  what: Record<string, unknown>,
  source: (signal: AbortSignal) => AsyncIterable<SseMessage>,
): Response {
  return streamSSE(c, async (stream) => {
    const controller = streams.open();
    metrics.streamOpened();
    const stop = () => controller.abort();
    c.req.raw.signal.addEventListener("abort", stop, { once: true });
    stream.onAbort(stop);
    let timer: NodeJS.Timeout | undefined;
    // Re-armed after every write: a ping goes out only after heartbeatMs with nothing else sent.
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => stream.write(": ping\n\n").then(arm, stop), options.heartbeatMs);
    };
    try {
      await stream.write(": connected\n\n");
      arm();
      for await (const message of source(controller.signal)) {
        await stream.writeSSE(message);
        arm();
      }
    } catch (err) {
      if (!controller.signal.aborted) {
        options.logger.warn("event stream failed", { err, ...what });
        await stream.writeSSE({ event: "error", data: JSON.stringify(errorResponse(err).body) }).catch(() => {});
      }
    } finally {
      clearTimeout(timer);
      c.req.raw.signal.removeEventListener("abort", stop);
      streams.done(controller);
      metrics.streamClosed();
    }
  });
}
