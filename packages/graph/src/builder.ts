import { compileGraph } from "./compile.ts";
import type { BranchFailure, GraphInput, GraphNodeInput, UnitePolicy } from "./definition.ts";

/** A node as the builder takes it: everything but its id and its edges (given with `edge`). */
export type BuilderNode<Ids extends string> = Omit<GraphNodeInput, "id" | "next" | "unites"> & {
  unites?: { id: Ids; policy?: UnitePolicy; onBranchFailure?: BranchFailure };
};

/**
 * Builds a graph's JSON in TypeScript: node ids are typed as they are added, so an edge or a
 * `unites` that names a node not yet defined is a compile error; `build()` checks the whole graph
 * (as a JSON graph is checked) and returns the same JSON a user would write.
 *
 *   const g = new GraphBuilder("research")
 *     .node("plan", { type: "planner", fanOut: true })
 *     .node("research", { type: "researcher" })
 *     .node("write", { type: "writer", unites: { id: "plan", onBranchFailure: "finish-running" }, inputs: { notes: "${{research.outputs.text}}" } })
 *     .edge("plan", "research")
 *     .edge("research", "write")
 *     .build();
 */
export class GraphBuilder<Ids extends string = never> {
  private readonly name: string | undefined;
  private readonly options: { version?: number; maxFanOut?: number };
  private readonly nodes: GraphNodeInput[] = [];

  constructor(name?: string, options: { version?: number; maxFanOut?: number } = {}) {
    this.name = name;
    this.options = options;
  }

  node<Id extends string>(id: Id, node: BuilderNode<Ids | Id>): GraphBuilder<Ids | Id> {
    this.nodes.push({ id, ...node });
    return this as unknown as GraphBuilder<Ids | Id>;
  }

  /** `to` may follow `from` (a loop back needs `maxIterations` on `from`). */
  edge(from: Ids, to: Ids): this {
    const node = this.nodes.find((n) => n.id === from)!;
    node.next = [...(node.next ?? []), to];
    return this;
  }

  /** The graph's JSON, checked (an INVALID_GRAPH error says what cannot run). */
  build(): GraphInput {
    const graph: GraphInput = {
      ...(this.name !== undefined && { name: this.name }),
      ...(this.options.version !== undefined && { version: this.options.version }),
      ...(this.options.maxFanOut !== undefined && { maxFanOut: this.options.maxFanOut }),
      nodes: this.nodes.map((n) => ({ ...n, ...(n.next && { next: [...n.next] }) })),
    };
    compileGraph(graph);
    return graph;
  }
}
