// A run's graph for drawing: its nodes and edges, from the graph the run was started with
// (`definition` in GET /v1/runs/{runId}): the edges are the nodes' `next`, and nodes not reached yet
// are drawn too.
import type { RunDetail, RunNode } from "./types.ts";

export interface Topology {
  /** Node ids, in the order to lay them out. */
  nodes: string[];
  edges: Array<[from: string, to: string]>;
}

export function runTopology(run: RunDetail): Topology {
  const definition = run.definition?.nodes ?? [];
  const ids = definition.map((n) => n.id);
  // Instances of a node the definition does not name (an answer without one) are still drawn.
  for (const n of run.nodes) if (!ids.includes(n.node)) ids.push(n.node);
  return { nodes: ids, edges: definition.flatMap((n) => (n.next ?? []).map((to): [string, string] => [n.id, to])) };
}

/** What a node's box says of its instances: the state that matters most, and how many are in each. */
export function nodeState(instances: readonly RunNode[]): { status: string; counts: Array<[status: string, count: number]> } {
  const counts = new Map<string, number>();
  for (const i of instances) counts.set(i.status, (counts.get(i.status) ?? 0) + 1);
  // Work under way first (a node stopping after its run ended, CANCELLING, is still under way), then what went wrong, then what is done.
  const status =
    ["RUNNING", "CANCELLING", "QUEUED", "CREATED", "ERRORED", "CANCELLED", "EXECUTED", "SKIPPED"].find((s) => counts.has(s)) ??
    [...counts.keys()][0] ??
    "UNREACHED";
  return { status, counts: [...counts] };
}
