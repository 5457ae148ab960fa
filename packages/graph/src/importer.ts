import { parseInput } from "@flotilla/core";
import { z } from "zod";
import type { GraphInput, GraphNodeInput } from "./definition.ts";

/**
 * A graph template in the format of the fan-out system Flotilla learns from (Exosphere): nodes with
 * `node_name` (the type), `identifier` (the id), `inputs` (`${{node.outputs.x}}`, the same syntax),
 * `next_nodes`, and `unites: { identifier }`.
 */
export const SeedGraphSchema = z.looseObject({
  name: z.string().optional(),
  nodes: z
    .array(
      z.looseObject({
        node_name: z.string().min(1),
        identifier: z.string().min(1),
        inputs: z.record(z.string(), z.json()).optional(),
        next_nodes: z.array(z.string()).optional(),
        unites: z.looseObject({ identifier: z.string().min(1), strategy: z.string().optional() }).optional(),
      }),
    )
    .min(1),
});
export type SeedGraph = z.input<typeof SeedGraphSchema>;

export interface ImportOptions {
  /** The graph's name. @default the template's `name`, else "graph" */
  name?: string;
  /**
   * Nodes whose output is a list to fan out over. The seed decides at run time (a node that returns a
   * list fans out); a Flotilla graph says so up front. Every node some node `unites` is one already.
   * @default []
   */
  fanOut?: readonly string[];
}

/**
 * Turns a seed template into a Flotilla graph (checked when it is compiled or started). What maps:
 * `identifier` → `id`, `node_name` → `type`, `next_nodes` → `next`, `inputs` as they are, `unites` →
 * `unites` (policy `all-done` when its strategy says so, else `all-success`, the seed's behaviour);
 * fan-out nodes as `fanOut` names them, plus those united. The seed's per-state lifecycle maps too:
 * its CREATED, QUEUED, EXECUTED and ERRORED are a node instance's; its SUCCESS (a branch whose
 * dependents all completed) is what a run's SUCCEEDED says of the whole run.
 */
export function importSeedGraph(template: SeedGraph, options: ImportOptions = {}): GraphInput {
  const seed = parseInput(SeedGraphSchema, template, "seed graph template");
  const fanOut = new Set([...(options.fanOut ?? []), ...seed.nodes.flatMap((n) => (n.unites ? [n.unites.identifier] : []))]);
  const nodes: GraphNodeInput[] = seed.nodes.map((n) => ({
    id: n.identifier,
    type: n.node_name,
    ...(n.inputs && { inputs: n.inputs }),
    ...(n.next_nodes?.length && { next: n.next_nodes }),
    ...(fanOut.has(n.identifier) && { fanOut: true }),
    ...(n.unites && { unites: { id: n.unites.identifier, policy: /all[-_ ]?done/i.test(n.unites.strategy ?? "") ? "all-done" : "all-success" } }),
  }));
  return { name: options.name ?? seed.name ?? "graph", nodes };
}
