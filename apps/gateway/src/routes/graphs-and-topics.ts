// Graph runs (@flotilla/graph, through the client) and publishing to the event bus (@flotilla/bus).
// Both span queues (a run's nodes sit on their node types' queues; a topic is no queue), so a
// token limited to some queues may use neither.
import { JsonValueSchema } from "@flotilla/core";
import { createRoute, z } from "@hono/zod-openapi";
import { assertAllQueues, requireRole } from "../auth.ts";
import type { GatewayApp, GatewayDeps } from "../context.ts";
import { GraphRunSchema, RunPageSchema, RunParams, RunStatusSchema, StartRunSchema } from "../run-schemas.ts";
import { AUTH_ERRORS, error, json, jsonBody, SECURED } from "./responses.ts";

const RunsQuery = z.object({
  status: RunStatusSchema.optional(),
  graph: z.string().optional(),
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  cursor: z.string().optional(),
});
const TopicParams = z.object({
  topic: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: "topic", in: "path" } }),
});
const PublishSchema = z
  .object({
    payload: JsonValueSchema,
    options: z
      .object({
        correlationId: z.string().optional(),
        replyTo: z.string().optional(),
        idempotencyKey: z.string().optional(),
        headers: z.record(z.string(), z.string()).optional(),
      })
      .strict()
      .optional(),
  })
  .strict()
  .openapi("PublishEvent");

const tags = ["graphs and topics"];
const ALL_QUEUES = "Needs a token for every queue (`queues: \"*\"`): a run's nodes and a topic's subscribers are on many.";
const notFound = { 404: error("No such graph run, or template.") } as const;

const listRuns = createRoute({
  operationId: "listRuns",
  method: "get",
  path: "/v1/runs",
  tags,
  summary: "Graph runs, newest first",
  description: ALL_QUEUES,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { query: RunsQuery },
  responses: { 200: json("A page of runs; pass `nextCursor` back as `cursor` for the next one.", RunPageSchema), ...AUTH_ERRORS },
});
const getRun = createRoute({
  operationId: "getRun",
  method: "get",
  path: "/v1/runs/{runId}",
  tags,
  summary: "A graph run and each node instance's state",
  description: ALL_QUEUES,
  middleware: [requireRole("read")] as const,
  ...SECURED,
  request: { params: RunParams },
  responses: {
    200: json("The run's status, the graph it was started with, its nodes' states, outputs and errors.", GraphRunSchema),
    ...AUTH_ERRORS,
    ...notFound,
  },
});
const startRun = createRoute({
  operationId: "startRun",
  method: "post",
  path: "/v1/runs",
  tags,
  summary: "Start a graph run",
  description: `The graph as JSON, or a stored template by name; options as \`startGraph\` takes them. ${ALL_QUEUES}`,
  middleware: [requireRole("submit")] as const,
  ...SECURED,
  request: { body: jsonBody(StartRunSchema) },
  responses: { 201: json("The run started (or the one an idempotency key already started).", z.object({ runId: z.string() })), ...AUTH_ERRORS, ...notFound },
});
const publish = createRoute({
  operationId: "publishEvent",
  method: "post",
  path: "/v1/topics/{topic}/events",
  tags,
  summary: "Publish an event to a topic",
  description: `Every subscription of the topic gets it. ${ALL_QUEUES}`,
  middleware: [requireRole("submit")] as const,
  ...SECURED,
  request: { params: TopicParams, body: jsonBody(PublishSchema) },
  responses: { 201: json("The event's id.", z.object({ topic: z.string(), id: z.string() })), ...AUTH_ERRORS },
});

export function registerGraphAndTopicRoutes(app: GatewayApp, { client, bus }: GatewayDeps): void {
  app.openapi(listRuns, async (c) => {
    assertAllQueues(c);
    // The graph package calls the next page's cursor `cursor`; the API says `nextCursor`, as for tasks.
    const { runs, cursor } = await client.listRuns(c.req.valid("query"));
    return c.json({ runs, ...(cursor !== undefined && { nextCursor: cursor }) }, 200);
  });
  app.openapi(getRun, async (c) => {
    assertAllQueues(c);
    return c.json(await client.graphs.run(c.req.valid("param").runId).status(), 200);
  });
  app.openapi(startRun, async (c) => {
    assertAllQueues(c);
    const { graph, input, options } = c.req.valid("json");
    const run = await client.startGraph(graph as never, input, (options ?? {}) as never);
    return c.json({ runId: run.runId }, 201);
  });
  app.openapi(publish, async (c) => {
    assertAllQueues(c);
    const { topic } = c.req.valid("param");
    const { payload, options } = c.req.valid("json");
    const id = await (await bus()).publish(topic, payload, options ?? {});
    return c.json({ topic, id }, 201);
  });
}
