// The fleet's lifecycle, live: what the dashboard listens to instead of polling.
import type { WatchEvent } from "@flotilla/client";
import { QueueNameSchema } from "@flotilla/core";
import { createRoute, z } from "@hono/zod-openapi";
import { assertQueue, mayTouch, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { pipeSse } from "../sse.ts";
import { AUTH_ERRORS, SECURED } from "./responses.ts";

const LiveQuery = z.object({ queue: QueueNameSchema.optional().openapi({ description: "Only this queue's tasks and the workers serving it." }) });

const live = createRoute({
  operationId: "streamFleetEvents",
  method: "get",
  path: "/v1/events",
  tags: ["fleet"],
  summary: "Follow the fleet's lifecycle (Server-Sent Events)",
  description:
    "From now on (no replay), one message per change: `event: <type>`, `data: <the event as JSON>`. Types: `task.submitted`, `task.started`, " +
    "`task.finished` (`status` COMPLETED, FAILED or CANCELLED), `task.status` (RETRYING, WAITING, PENDING), `worker.joined`, `worker.left` " +
    "(`reason` stopped or dead), `worker.state` (running, not-ready with `reasons`, draining), `run.started`, `run.finished`, and " +
    "`watch.lagged` (`dropped`: this many of the oldest were dropped because the reader fell behind). Status changes come as they " +
    "happen; submissions, workers and runs are read every second. A token limited to some queues sees their tasks and the workers " +
    "serving them, and no graph runs. An idle stream gets a `: ping` comment line every heartbeat interval.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { query: LiveQuery },
  responses: { 200: { description: "An event stream.", content: { "text/event-stream": { schema: z.string() } } }, ...AUTH_ERRORS },
});

export function registerLiveRoutes(app: GatewayApp, deps: GatewayDeps): void {
  app.openapi(live, async (c) => {
    const { queue } = c.req.valid("query");
    if (queue !== undefined) assertQueue(c, queue);
    const everyQueue = c.get("principal").queues === "*";
    // Workers the caller may see: those serving a queue it may touch (learnt as they join, and those there now).
    const visible = new Set<string>();
    if (!everyQueue || queue !== undefined)
      for (const w of (await deps.client.fleet.status()).workers)
        if ((w.queues ?? []).some((q) => (queue === undefined || q === queue) && mayTouch(c, q))) visible.add(w.workerId);
    const wants = (e: WatchEvent): boolean => {
      if ("taskId" in e) return (queue === undefined || e.queue === queue) && mayTouch(c, e.queue);
      if (e.type === "worker.joined") {
        const mine = e.queues.some((q) => (queue === undefined || q === queue) && mayTouch(c, q));
        if (mine) visible.add(e.workerId);
        return mine;
      }
      if (e.type === "worker.left" || e.type === "worker.state") return (everyQueue && queue === undefined) || visible.has(e.workerId);
      if (e.type === "run.started" || e.type === "run.finished") return everyQueue && queue === undefined;
      return true;
    };
    const feed = await deps.feed.subscribe(wants);
    return pipeSse(c, deps, { stream: "fleet" }, async function* (signal) {
      signal.addEventListener("abort", () => feed.close(), { once: true });
      try {
        for await (const event of feed) yield { event: event.type, data: JSON.stringify(event) };
      } finally {
        feed.close();
      }
    });
  });
}
