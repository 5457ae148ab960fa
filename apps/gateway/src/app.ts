import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { ValidationError, type ValidationIssue } from "@flotilla/core";
import { serveStatic } from "@hono/node-server/serve-static";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { cors } from "hono/cors";
import { matchedRoutes } from "hono/route";
import { authenticate } from "./auth.ts";
import { bodyLimit } from "./body-limit.ts";
import type { GatewayApp, GatewayDeps, GatewayEnv } from "./context.ts";
import { errorResponse, GatewayError, GatewayErrorCodes } from "./errors.ts";
import { FleetEventSchema, TaskEventSchema } from "./event-schemas.ts";
import { registerDeadLetterRoutes } from "./routes/dead-letters.ts";
import { registerEventRoutes } from "./routes/events.ts";
import { registerFleetRoutes } from "./routes/fleet.ts";
import { registerGraphAndTopicRoutes } from "./routes/graphs-and-topics.ts";
import { registerLiveRoutes } from "./routes/live.ts";
import { registerOpsRoutes } from "./routes/ops.ts";
import { registerRunControlRoutes } from "./routes/run-control.ts";
import { registerTaskRoutes } from "./routes/tasks.ts";
import { registerTokenRoutes } from "./routes/tokens.ts";
import { registerTopicDeadLetterRoutes } from "./routes/topic-dead-letters.ts";
import { registerTopicRoutes } from "./routes/topics.ts";

/** Where a validation failure was, as a caller names it. */
const TARGETS: Record<string, string> = { json: "body", query: "query", param: "path", header: "header" };

/** The Hono app: middleware, every route, the error mapping and the OpenAPI document. */
export function buildApp(deps: GatewayDeps): GatewayApp {
  const { options, metrics } = deps;
  const app: GatewayApp = new OpenAPIHono<GatewayEnv>({
    // A request that fails its schema is a ValidationError like any other, so it reads the same as the client's.
    defaultHook: (result) => {
      if (result.success) return;
      const issues: ValidationIssue[] = result.error.issues.map((i) => {
        // An unknown key is named itself, not the object holding it: `options.bogus`, not `options`.
        const path = i.code === "unrecognized_keys" ? [...i.path, i.keys[0]] : i.path;
        return { path: path.map(String).join("."), message: i.message };
      });
      throw new ValidationError(TARGETS[result.target] ?? result.target, issues);
    },
  });

  app.use("*", async (c, next) => {
    await next();
    metrics.countRequest(c.req.method, routeLabel(c), c.res.status);
  });
  if (options.corsOrigins.length > 0) {
    app.use(
      "*",
      cors({
        origin: options.corsOrigins.includes("*") ? "*" : [...options.corsOrigins],
        allowHeaders: ["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"],
        exposeHeaders: ["Location"],
        maxAge: 600,
      }),
    );
  }
  app.use("/v1/*", authenticate(deps.tokens, deps.signer));
  app.use("/v1/*", bodyLimit(options.bodyLimitBytes));
  app.openAPIRegistry.registerComponent("securitySchemes", "bearer", { type: "http", scheme: "bearer" });
  // No route's body is these (an event stream is text): each message's data is one of them.
  app.openAPIRegistry.register("TaskEvent", TaskEventSchema);
  app.openAPIRegistry.register("FleetEvent", FleetEventSchema);

  registerTaskRoutes(app, deps);
  registerEventRoutes(app, deps);
  registerFleetRoutes(app, deps);
  registerLiveRoutes(app, deps);
  registerDeadLetterRoutes(app, deps);
  registerGraphAndTopicRoutes(app, deps);
  registerRunControlRoutes(app, deps);
  registerTopicRoutes(app, deps);
  registerTopicDeadLetterRoutes(app, deps);
  registerOpsRoutes(app, deps);
  registerTokenRoutes(app, deps);
  if (options.dashboardDir !== undefined) serveDashboard(app, options.dashboardDir);

  app.notFound((c) => {
    const { status, body } = errorResponse(new GatewayError(GatewayErrorCodes.NOT_FOUND, `no route ${c.req.method} ${c.req.path}${slashHint(c.req.path)}`));
    return c.json(body, status);
  });
  app.onError((err, c) => {
    const { status, body } = errorResponse(err);
    if (body.error.code === GatewayErrorCodes.INTERNAL) options.logger.error("request failed", { err, method: c.req.method, path: c.req.path });
    return c.json(body, status);
  });
  return app;
}

/**
 * The dashboard's static files at `/` (index.html for `/`), with no token: the page holds no data, it
 * calls the API under `/v1` with the token the user gives it. Nothing under `/v1` is a file.
 */
function serveDashboard(app: GatewayApp, dir: string): void {
  const root = resolve(dir);
  if (!existsSync(root))
    throw ValidationError.of("gateway options", "dashboardDir", `${root} does not exist: build the dashboard first (pnpm --filter @flotilla/dashboard build)`);
  const files = serveStatic<GatewayEnv>({ root });
  app.get("*", (c, next) => (c.req.path === "/v1" || c.req.path.startsWith("/v1/") ? next() : files(c, next)));
}

/**
 * A task id's slash sent as is (`/v1/tasks/default/x`) reaches no route: the answer says how to send
 * it, with the path as it should be.
 */
function slashHint(path: string): string {
  const [queue, name, ...rest] = path.startsWith("/v1/tasks/") ? path.slice("/v1/tasks/".length).split("/") : [];
  if (!queue || !name) return "";
  return `: a task id's "/" is sent as %2F (${["/v1/tasks", `${queue}%2F${name}`, ...rest].join("/")})`;
}

/** The route pattern that answered (`/v1/tasks/:id`), never the raw path: ids must not become metric series. */
function routeLabel(c: Parameters<MiddlewareHandler>[0]): string {
  const route = matchedRoutes(c).findLast((r) => r.method !== "ALL");
  return route?.path ?? "unmatched";
}
