import { splitTaskId } from "@flotilla/core";
import { createRoute, z } from "@hono/zod-openapi";
import { assertQueue, readTaskScope, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { EventsHeaders, EventsQuery, TaskIdParams } from "../schemas.ts";
import { pipeSse } from "../sse.ts";
import { AUTH_ERRORS, NOT_FOUND, SECURED } from "./responses.ts";

const events = createRoute({
  operationId: "streamTaskEvents",
  method: "get",
  path: "/v1/tasks/{id}/events",
  tags: ["tasks"],
  summary: "Follow a task's events (Server-Sent Events)",
  description:
    "The task's events already published, then live ones, with no gap and no duplicate; the stream ends after the terminal status event. " +
    "Each event is `id: <seq>`, `event: <type>`, `data: <the event as JSON>`. Reconnect with the `Last-Event-ID` header (or `?after=<seq>`) to resume. " +
    "An idle stream gets a `: ping` comment line every heartbeat interval.",
  middleware: [requireRole("read", readTaskScope)] as const,
  ...SECURED,
  request: { params: TaskIdParams, query: EventsQuery, headers: EventsHeaders },
  responses: {
    200: { description: "An event stream.", content: { "text/event-stream": { schema: z.string() } } },
    ...AUTH_ERRORS,
    ...NOT_FOUND,
  },
});

export function registerEventRoutes(app: GatewayApp, deps: GatewayDeps): void {
  const { client } = deps;
  app.openapi(events, async (c) => {
    const { id } = c.req.valid("param");
    assertQueue(c, splitTaskId(id).queue);
    const lastEventId = c.req.valid("header")["last-event-id"];
    // The header is what a browser's EventSource sends when it reconnects by itself: it wins.
    const after = lastEventId !== undefined ? Number(lastEventId) : (c.req.valid("query").after ?? 0);
    const handle = client.handle(id);
    // Asked before the stream starts, so an unknown task is a 404 with a JSON body, not an empty stream.
    await handle.status();

    return pipeSse(c, deps, { taskId: id }, async function* (signal) {
      for await (const event of handle.stream({ after, signal })) yield { id: String(event.seq), event: event.type, data: JSON.stringify(event) };
    });
  });
}
