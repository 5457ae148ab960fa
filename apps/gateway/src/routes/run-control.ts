// Cancelling and retrying a graph run (@flotilla/graph's run handle, through the client): the task
// routes' cancel and retry for runs, with the same roles. A run spans queues, so a token limited to
// some queues may do neither.
import { createRoute } from "@hono/zod-openapi";
import { assertAllQueues, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { jsonDepthGuard } from "../json-depth-guard.ts";
import { RunCancelOutcomeSchema, RunParams, RunRetriedSchema } from "../run-schemas.ts";
import { CancelRequestSchema } from "../schemas.ts";
import { AUTH_ERRORS, error, json, jsonBody, SECURED } from "./responses.ts";

const tags = ["graphs and topics"];
const ALL_QUEUES = 'Needs a token for every queue (`queues: "*"`): a run\'s nodes are on many.';
const notFound = { 404: error("No such graph run (never started, or expired): RUN_NOT_FOUND.") } as const;

const cancelRun = createRoute({
  operationId: "cancelRun",
  method: "post",
  path: "/v1/runs/{runId}/cancel",
  tags,
  summary: "Cancel a graph run",
  description: `No node of it starts afterwards; running ones are told to abort. A run that had ended is left as it is (\`finished\`). ${ALL_QUEUES}`,
  middleware: [requireRole("submit"), jsonDepthGuard] as const,
  ...SECURED,
  request: { params: RunParams, body: jsonBody(CancelRequestSchema, false) },
  responses: { 200: json("What the cancel did.", RunCancelOutcomeSchema), ...AUTH_ERRORS, ...notFound },
});

const retryRun = createRoute({
  operationId: "retryRun",
  method: "post",
  path: "/v1/runs/{runId}/retry",
  tags,
  summary: "Resume a FAILED or CANCELLED graph run",
  description: `Its failed, cancelled and unfinished nodes run again as new tasks; every node that succeeded keeps its output. ${ALL_QUEUES}`,
  middleware: [requireRole("admin")] as const,
  ...SECURED,
  request: { params: RunParams },
  responses: {
    200: json("The run resumed.", RunRetriedSchema),
    ...AUTH_ERRORS,
    400: error(
      "A parameter failed validation, or the retry was refused: the run is RUNNING or SUCCEEDED (VALIDATION_ERROR, field `runId`, its status in `error.details.status`).",
    ),
    ...notFound,
  },
});

export function registerRunControlRoutes(app: GatewayApp, { client }: GatewayDeps): void {
  app.openapi(cancelRun, async (c) => {
    assertAllQueues(c);
    const { runId } = c.req.valid("param");
    const { reason } = c.req.valid("json");
    const { outcome, status } = await client.graphs.run(runId).cancel(reason);
    return c.json({ runId, outcome, status }, 200);
  });

  app.openapi(retryRun, async (c) => {
    assertAllQueues(c);
    const { runId } = c.req.valid("param");
    // Refused (RUNNING or SUCCEEDED): RunNotRetryableError, a ValidationError carrying the run's status → 400.
    await client.graphs.run(runId).retry();
    return c.json({ runId, status: "RUNNING" as const }, 200);
  });
}
