import { BackoffSchema, JsonValueSchema, PriorityOptionSchema, QueueNameSchema, TimeoutMsSchema } from "@flotilla/core";
import { z } from "zod";

/** A node's id within its graph: it names the node in expressions (`${{research.outputs.notes}}`) and task ids. */
export const NodeIdSchema = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,39}$/, "a node id is a letter, then up to 39 letters, digits, _ or -")
  .refine((id) => id !== "input" && id !== "state", "input and state name the run's input and state in expressions");

/** A node type: a registered node function, or an agent or swarm by its name. */
export const NodeTypeSchema = z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "a node type is 1 to 64 letters, digits, _ . or -");

/** A graph run's id: it is the hash tag of the run's keys and the start of its node tasks' names. */
export const RunIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,40}$/, "a run id is 1 to 40 letters, digits, _ or -");

/**
 * `all-success`: a failed branch fails the join (and the run). `all-done`: the join runs with every
 * branch, failed ones included (as `{ error }` items).
 */
export const UnitePolicySchema = z.enum(["all-success", "all-done"]);
export type UnitePolicy = z.infer<typeof UnitePolicySchema>;

/**
 * What a failed branch does to an `all-success` join's run. `fail-fast`: the run fails at once and
 * its running and queued nodes are cancelled (running ones abort mid-call). `finish-running`: every
 * other node runs to its end first, then the run fails with each failed branch recorded.
 */
export const BranchFailureSchema = z.enum(["fail-fast", "finish-running"]);
export type BranchFailure = z.infer<typeof BranchFailureSchema>;

/** A join: the fan-out it unites, its policy, and (all-success) what a failed branch does. */
export const UnitesSchema = z
  .object({ id: NodeIdSchema, policy: UnitePolicySchema.default("all-success"), onBranchFailure: BranchFailureSchema.optional() })
  .strict();

export const GraphNodeSchema = z
  .object({
    id: NodeIdSchema,
    type: NodeTypeSchema,
    /**
     * Values and expressions (`${{input.topic}}`, `${{research.outputs.notes}}`, or text with them
     * inside): an object of them, or any JSON (one expression alone gives that value as it is).
     * @default the run input for a first node, else the single predecessor's outputs (by id when several)
     */
    inputs: JsonValueSchema.optional(),
    /** The nodes that may follow this one. @default [] (the node ends its branch) */
    next: z.array(NodeIdSchema).max(64).default([]),
    /** Its output is a list: one branch per item, each running the nodes after it once. @default false */
    fanOut: z.boolean().default(false),
    /**
     * Runs once per fan-out of `id`, after every branch reached it, with the branches' outputs as
     * lists in branch order. `onBranchFailure` (all-success only): `fail-fast` (default) or `finish-running`.
     */
    unites: UnitesSchema.optional(),
    /** A router registered by name on the workers chooses among `next` from the output. @default the output's `next` field, else every `next` */
    router: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/)
      .optional(),
    /** Required on a node whose `next` loops back: how many times the loop body runs at most (the first pass included). */
    maxIterations: z.number().int().min(1).max(1000).optional(),
    /**
     * Retries of the node's task. `maxDeliveries` bounds the attempts started, counting a crashed
     * worker's task taken over. @default no retries; maxDeliveries `maxRetries + 3`
     */
    retry: z
      .object({
        maxRetries: z.number().int().min(0).max(100),
        backoff: BackoffSchema.optional(),
        maxDeliveries: z.number().int().min(1).max(1000).optional(),
      })
      .strict()
      .optional(),
    timeoutMs: TimeoutMsSchema.optional(),
    /** A lane, or an integer (above 0 high, 0 normal, below 0 low). @default "normal" */
    priority: PriorityOptionSchema.optional(),
    /** The queue the node's tasks go to. @default `node.<type>` (see queueOfType) */
    queue: QueueNameSchema.optional(),
  })
  .strict();
export type GraphNode = z.output<typeof GraphNodeSchema>;
export type GraphNodeInput = z.input<typeof GraphNodeSchema>;

export const GraphSchema = z
  .object({
    /** Names the graph in listings and metrics. @default "graph" */
    name: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/)
      .default("graph"),
    version: z.number().int().min(1).optional(),
    nodes: z.array(GraphNodeSchema).min(1).max(200),
    /** A fan-out wider than this fails its node (FANOUT_INVALID). @default 10_000 */
    maxFanOut: z.number().int().min(0).max(100_000).default(10_000),
  })
  .strict();
export type Graph = z.output<typeof GraphSchema>;
/** A graph as written (JSON, or what the builder produces): defaults not yet applied. */
export type GraphInput = z.input<typeof GraphSchema>;

/** The queue a node type's tasks go to when its node names none: a worker serving `writer` never sees `researcher` work. */
export const queueOfType = (type: string): string => `node.${type}`;

/** The queue a node's tasks go to. */
export const queueOfNode = (node: Pick<GraphNode, "type" | "queue">): string => node.queue ?? queueOfType(node.type);
