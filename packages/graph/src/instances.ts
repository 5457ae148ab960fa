import { ValidationError } from "@flotilla/core";
import { z } from "zod";
import { NodeIdSchema, NodeTypeSchema, RunIdSchema, UnitePolicySchema } from "./definition.ts";

/**
 * One run of one node: `<node>@<branch>#<n>`. The branch is the fan-out item indexes that lead to it
 * ('' outside any fan-out, '3', '3.7'); n counts the node's runs on that branch (more than 1 only in
 * a loop). The run's scripts build and read the same form.
 */
export interface Instance {
  node: string;
  /** Item indexes, outermost fan-out first. */
  branch: number[];
  n: number;
}

const INSTANCE = /^([A-Za-z][A-Za-z0-9_-]*)@((?:\d+(?:\.\d+)*)?)#(\d+)$/;

export function parseInstance(key: string): Instance {
  const m = INSTANCE.exec(key);
  if (!m) throw ValidationError.of("node instance", "instance", `"${key}" is not <node>@<branch>#<n>`);
  return { node: m[1]!, branch: m[2] ? m[2].split(".").map(Number) : [], n: Number(m[3]) };
}

export const instanceKey = (i: Instance): string => `${i.node}@${i.branch.join(".")}#${i.n}`;

/**
 * The name of an instance's task in its queue: `<run>:<node>:<branch>:<n>`, and `:r<try>` after a
 * `retry()` of the run. The same on every create of one try, so a duplicate create is a no-op.
 */
export const taskNameOf = (runId: string, i: Instance, tryNumber = 0): string =>
  `${runId}:${i.node}:${i.branch.join(".")}:${i.n}${tryNumber > 0 ? `:r${tryNumber}` : ""}`;

/** The run, instance and try a node task's name stands for, or undefined for a name of another form. */
export function instanceOfTaskName(name: string): { runId: string; instance: Instance; try: number } | undefined {
  const m = /^([A-Za-z0-9_-]+):([A-Za-z][A-Za-z0-9_-]*):((?:\d+(?:\.\d+)*)?):(\d+)(?::r(\d+))?$/.exec(name);
  if (!m) return undefined;
  return { runId: m[1]!, instance: { node: m[2]!, branch: m[3] ? m[3].split(".").map(Number) : [], n: Number(m[4]) }, try: Number(m[5] ?? 0) };
}

/** The `node` part of a node task's payload, as the graph package writes and reads it. */
export const NodeTaskSchema = z
  .object({
    run: RunIdSchema,
    id: NodeIdSchema,
    type: NodeTypeSchema,
    /** The instance (see Instance). */
    instance: z.string().regex(INSTANCE),
    /** Its output must be a list of at most this many items (a fan-out node). */
    fanOut: z.number().int().min(0).optional(),
    /** The nodes it may choose among (a node with more than one next, or a router). */
    next: z.array(NodeIdSchema).optional(),
    router: z.string().optional(),
    /** A unites node: its inputs are resolved by the worker that runs it, from the run's keys (its branches' outputs stay there). */
    unites: z.object({ id: NodeIdSchema, policy: UnitePolicySchema }).strict().optional(),
  })
  .strict();
export type NodeTask = z.infer<typeof NodeTaskSchema>;
