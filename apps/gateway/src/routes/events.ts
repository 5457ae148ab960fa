import { splitTaskId } from "@flotilla/core";
import { createRoute, z } from "@hono/zod-openapi";
import { streamSSE } from "hono/streaming";
import { assertQueue, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { errorResponse } from "../errors.ts";
import { EventsHeaders, EventsQuery, TaskIdParams } from "../schemas.ts";
import { AUTH_ERRORS, NOT_FOUND, SECURED } from "./responses.ts";

const events = createRoute({
  method: "get",
  path: "/v1/tasks/{id}/events",
  tags: ["tasks"],
  summary: "Follow a task's events (Server-Sent Events)",
  description:
    "The task's events already published, then live ones, with no gap and no duplicate; the stream ends after the terminal status event. " +
    "Each event is `id: <seq>`, `event: <type>`, `data: <the event as JSON>`. Reconnect with the `Last-Event-ID` header (or `?after=<seq>`) to resume. " +
    "An idle stream gets a `: ping` comment line every heartbeat interval.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: TaskIdParams, query: EventsQuery, headers: EventsHeaders },
  responses: {
    200: { description: "An event stream.", content: { "text/event-stream": { schema: z.string() } } },
    ...AUTH_ERRORS,
    ...NOT_FOUND,
  },
});

export function registerEventRoutes(app: GatewayApp, { client, options, metrics, streams }: GatewayDeps): void {
  app.openapi(events, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const lastEventId = c.req.valid("header")["last-event-id"];
    // The header is what a browser's EventSource sends when it reconnects by itself: it wins.
    const after = lastEventId !== undefined ? Number(lastEventId) : (c.req.valid("query").after ?? 0);
    const handle = client.handle(id);
    // Asked before the stream starts, so an unknown task is a 404 with a JSON body, not an empty stream.
    await handle.status();

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
        // Sends the headers at once, so the caller knows the stream is open before the first event.
        await stream.write(": connected\n\n");
        arm();
        for await (const event of handle.stream({ after, signal: controller.signal })) {
          await stream.writeSSE({ id: String(event.seq), event: event.type, data: JSON.stringify(event) });
          arm();
        }
      } catch (err) {
        if (!controller.signal.aborted) {
          options.logger.warn("event stream failed", { err, taskId: id });
          await stream.writeSSE({ event: "error", data: JSON.stringify(errorResponse(err).body) }).catch(() => {});
        }
      } finally {
        clearTimeout(timer);
        c.req.raw.signal.removeEventListener("abort", stop);
        streams.done(controller);
        metrics.streamClosed();
      }
    });
  });
}
