// Graph runs as `GET /v1/runs` and `GET /v1/runs/{runId}` answer them (@flotilla/graph, through the
// client), as zod schemas for the OpenAPI document. The statuses are checked against the graph
// package's own types, both ways, so a status added there fails the build here until it is described.
import { JsonValueSchema } from "@flotilla/core";
import { GraphSchema, type NodeStatus, type RunCancelOutcome, type RunStatus } from "@flotilla/graph";
import { z } from "@hono/zod-openapi";
import { withOpenApi } from "./openapi-meta.ts";
import { JsonObjectSchema } from "./schemas.ts";

const RUN_STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const satisfies readonly RunStatus[];
const CANCEL_OUTCOMES = ["cancelled", "finished"] as const satisfies readonly RunCancelOutcome["outcome"][];
const NODE_STATUSES = ["CREATED", "QUEUED", "RUNNING", "CANCELLING", "EXECUTED", "ERRORED", "CANCELLED", "SKIPPED"] as const satisfies readonly NodeStatus[];
/** Compiles only while every status of the graph package is listed above. */
export type AllStatusesListed = [
  Exclude<RunStatus, (typeof RUN_STATUSES)[number]>,
  Exclude<NodeStatus, (typeof NODE_STATUSES)[number]>,
  Exclude<RunCancelOutcome["outcome"], (typeof CANCEL_OUTCOMES)[number]>,
] extends [never, never, never]
  ? true
  : never;

export const RunStatusSchema = z.enum(RUN_STATUSES).openapi("RunStatus");

export const RunParams = z.object({
  runId: z
    .string()
    .min(1)
    .max(200)
    .openapi({ param: { name: "runId", in: "path" } }),
});
export const NodeStatusSchema = z.enum(NODE_STATUSES).openapi("NodeStatus");

const RunErrorSchema = z
  .object({
    message: z.string(),
    code: z.string(),
    node: z.string().optional().openapi({ description: "The node instance whose end decided it." }),
    cause: z.object({ message: z.string(), code: z.string() }).optional().openapi({ description: "That node's own error." }),
  })
  .openapi("RunError", { description: "Why a run failed or was cancelled." });

export const RunSummarySchema = z
  .object({
    runId: z.string(),
    graph: z.string().openapi({ description: "The graph's name." }),
    status: RunStatusSchema,
    createdAt: z.number(),
    endedAt: z.number().optional(),
    error: RunErrorSchema.optional(),
  })
  .openapi("RunSummary");

export const RunPageSchema = z
  .object({
    runs: z.array(RunSummarySchema),
    nextCursor: z.string().optional().openapi({ description: "Pass it back as `cursor` for the next page; absent on the last one." }),
  })
  .openapi("RunPage");

const NodeInstanceSchema = z
  .object({
    node: z.string().openapi({ description: "The node's id in the graph." }),
    branch: z.array(z.number().int()).openapi({ description: "Item indexes, outermost fan-out first." }),
    n: z.number().int().openapi({ description: "The iteration (a loop runs a node more than once)." }),
    instance: z.string().openapi({ description: "`<node>@<branch>#<n>`" }),
    status: NodeStatusSchema,
    taskId: z.string(),
    output: JsonValueSchema.optional(),
    error: JsonValueSchema.optional(),
  })
  .openapi("NodeInstance");

/** The graph as the run was started with it (defaults applied): what a view draws the run on. */
const GraphDefinitionSchema = withOpenApi(GraphSchema, "Graph", { description: "A graph: its nodes, each with its `next` nodes, fan-outs and joins." });

export const GraphRunSchema = RunSummarySchema.extend({
  definition: GraphDefinitionSchema,
  nodes: z.array(NodeInstanceSchema).openapi({ description: "Every node instance, the graph's nodes in order, each node's by branch, then iteration." }),
}).openapi("GraphRun");

export const StartRunSchema = z
  .object({
    graph: z
      .union([z.string().min(1), JsonObjectSchema])
      .openapi({ description: "A graph as JSON (the `Graph` schema), or a stored template's `name` / `name@version`." }),
    input: JsonValueSchema,
    options: JsonObjectSchema.optional().openapi({
      description: "As `startGraph` takes them: `runId`, `ttlMs`, `detailed`, `metadata`, `idempotencyKey`, `idempotencyWindowMs`.",
    }),
  })
  .strict()
  .openapi("StartRun");

/** What `POST /v1/runs/{runId}/cancel` answers: the graph package's `cancel()` outcome, with the run's id. */
export const RunCancelOutcomeSchema = z
  .object({
    runId: z.string(),
    outcome: z.enum(CANCEL_OUTCOMES).openapi({
      description:
        "`cancelled`: it was running; it is CANCELLED now, no node starts any more and running ones are told to abort (they read CANCELLING until their workers record their ends). `finished`: it had ended already; nothing changed.",
    }),
    status: RunStatusSchema.openapi({ description: "The run's status after the cancel: CANCELLED, or how it had ended." }),
  })
  .openapi("RunCancelOutcome");

/** What `POST /v1/runs/{runId}/retry` answers: the run resumed. */
export const RunRetriedSchema = z
  .object({ runId: z.string(), status: z.literal("RUNNING").openapi({ description: "The resumed run runs again." }) })
  .openapi("RunRetried");
