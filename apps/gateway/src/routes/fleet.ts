import { createRoute } from "@hono/zod-openapi";
import { mayTouch, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { AlertsQuery, AlertsSchema, QueuesSchema, WorkersSchema } from "../schemas.ts";
import { AUTH_ERRORS, json, SECURED } from "./responses.ts";

const tags = ["fleet"];

const queues = createRoute({
  operationId: "listQueues",
  method: "get",
  path: "/v1/queues",
  tags,
  summary: "Every queue with its depth and recent outcomes",
  description: "A token limited to some queues sees only those.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  responses: { 200: json("The queues, sorted by name.", QueuesSchema), ...AUTH_ERRORS },
});

const workers = createRoute({
  operationId: "listWorkers",
  method: "get",
  path: "/v1/workers",
  tags,
  summary: "The fleet's workers",
  description: "A token limited to some queues sees only the workers serving one of them.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  responses: { 200: json("Workers with their last heartbeat, and the fleet's totals.", WorkersSchema), ...AUTH_ERRORS },
});

const alerts = createRoute({
  operationId: "listAlerts",
  method: "get",
  path: "/v1/alerts",
  tags,
  summary: "Recent alert events, and those firing now",
  description: "A token limited to some queues sees only their alerts.",
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { query: AlertsQuery },
  responses: { 200: json("The latest alert events, newest first, and the alerts firing now.", AlertsSchema), ...AUTH_ERRORS },
});

export function registerFleetRoutes(app: GatewayApp, { client }: GatewayDeps): void {
  app.openapi(queues, async (c) => {
    const all = await client.fleet.queues();
    return c.json({ queues: all.filter((q) => mayTouch(c, q.queue)) }, 200);
  });

  app.openapi(workers, async (c) => {
    const status = await client.fleet.status();
    const visible = status.workers.filter((w) => c.get("principal").queues === "*" || (w.queues ?? []).some((q) => mayTouch(c, q)));
    return c.json({ ...status, workers: visible }, 200);
  });

  app.openapi(alerts, async (c) => {
    const { count } = c.req.valid("query");
    const { events, firing } = await client.fleet.alerts(count === undefined ? {} : { count });
    return c.json({ events: events.filter((e) => mayTouch(c, e.queue)), firing: firing.filter((e) => mayTouch(c, e.queue)) }, 200);
  });
}
