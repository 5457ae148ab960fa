import { createRoute, z } from "@hono/zod-openapi";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { json } from "./responses.ts";

const tags = ["operations"];
/** Probes and scrapers send no token: said on each operation, so a generator knows to send none. */
const OPEN = { security: [] };

const StatusSchema = z.object({ status: z.string() });

const healthz = createRoute({
  operationId: "getHealth",
  method: "get",
  path: "/healthz",
  tags,
  summary: "Liveness: the process answers",
  ...OPEN,
  responses: { 200: json("Up.", StatusSchema) },
});

const readyz = createRoute({
  operationId: "getReadiness",
  method: "get",
  path: "/readyz",
  tags,
  summary: "Readiness: Redis answers",
  ...OPEN,
  responses: { 200: json("Redis answered.", StatusSchema), 503: json("Redis did not answer in time.", StatusSchema) },
});

const metricsRoute = createRoute({
  operationId: "getMetrics",
  method: "get",
  path: "/metrics",
  tags,
  summary: "Prometheus metrics (text exposition format)",
  ...OPEN,
  responses: { 200: { description: "Requests by route and status, open event streams.", content: { "text/plain": { schema: z.string() } } } },
});

/** The document's own parts (the routes and schemas come from the app). */
export const OPENAPI_CONFIG = {
  openapi: "3.0.3",
  info: {
    title: "Flotilla gateway",
    version: "1",
    description:
      "Submit agent runs to a Flotilla fleet and follow them, from any language. Authenticate /v1 with `Authorization: Bearer <token>`. " +
      "A task id is `<queue>/<name>`: send its slash as `%2F` in a path. The data of each Server-Sent Event is described by the `TaskEvent` and `FleetEvent` schemas.",
    license: { name: "MIT", url: "https://opensource.org/license/mit" },
  },
  // Relative: the gateway that serves the document (behind a proxy too).
  servers: [{ url: "/", description: "The gateway serving this document" }],
};

/** The unauthenticated operational endpoints (probes, scraping, the API's description). */
export function registerOpsRoutes(app: GatewayApp, { client, options, metrics }: GatewayDeps): void {
  app.openapi(healthz, (c) => c.json({ status: "ok" }, 200));

  app.openapi(readyz, async (c) => {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(resolve, options.readyTimeoutMs, false);
    });
    // The cheapest read the client offers: one page of one task. Any answer from Redis is ready.
    const answered = client.listTasks({ limit: 1 }).then(
      () => true,
      () => false,
    );
    const ready = await Promise.race([answered, timeout]);
    clearTimeout(timer);
    return ready ? c.json({ status: "ready" }, 200) : c.json({ status: "redis unreachable" }, 503);
  });

  app.openapi(metricsRoute, (c) => c.text(metrics.render(), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }));

  app.doc("/openapi.json", OPENAPI_CONFIG);
}
