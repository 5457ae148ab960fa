import { ErrorCodes, FlotillaError, type JsonValue, parseInput, ValidationError } from "@flotilla/core";
import { type BranchFailure, type Graph, type GraphInput, type GraphNode, GraphSchema, queueOfNode } from "./definition.ts";
import { referencesIn } from "./expressions.ts";

/** A node with what the run needs to know about its place in the graph. */
export interface CompiledNode {
  readonly node: GraphNode;
  readonly queue: string;
  /** Nodes with a forward edge to this one. */
  readonly preds: readonly string[];
  /** Its `next`, each marked when the edge loops back. */
  readonly next: ReadonlyArray<{ id: string; back: boolean }>;
  /** The fan-out nodes whose branches it runs in, outermost first. */
  readonly scope: readonly string[];
  /** Every node it comes after (forward edges only). */
  readonly ancestors: ReadonlySet<string>;
  /** It runs in a loop body. */
  readonly inLoop: boolean;
  /** It may run more than once on one branch: it is in a loop body or comes after one. */
  readonly repeats: boolean;
  /** Its inputs as written, or the default (the run input for a first node, else its predecessors' outputs). */
  readonly inputs: JsonValue;
}

/** A graph checked as a whole, ready to run. */
export interface CompiledGraph {
  readonly graph: Graph;
  readonly nodes: ReadonlyMap<string, CompiledNode>;
  /** The nodes that start a run. */
  readonly roots: readonly string[];
  /** Every node, each after all of its (forward) predecessors. */
  readonly order: readonly string[];
  /** The compact form the run's scripts read (see lua/advance-5.lua). */
  readonly topology: string;
}

const invalid = (message: string) => new FlotillaError(ErrorCodes.INVALID_GRAPH, `invalid graph: ${message}`, { retryable: false });

/**
 * Checks a graph as a whole and works out its shape, so that what cannot run fails here, at
 * definition time, with an INVALID_GRAPH error naming the node: unknown or duplicate ids, a loop
 * without maxIterations, a join (`unites`) of a node that is not a fan-out before it, an expression
 * that names a node that is not an ancestor, branches that meet without being united.
 */
export function compileGraph(input: GraphInput | Graph): CompiledGraph {
  misplaced(input);
  const graph = parseInput(GraphSchema, input, "graph");
  const byId = new Map<string, GraphNode>();
  for (const n of graph.nodes) {
    if (byId.has(n.id)) throw invalid(`node id ${n.id} is used twice`);
    byId.set(n.id, n);
  }
  for (const n of graph.nodes) {
    for (const next of n.next) if (!byId.has(next)) throw invalid(`node ${n.id}: next names ${next}, which is not a node`);
    if (new Set(n.next).size !== n.next.length) throw invalid(`node ${n.id}: next names a node twice`);
    if (n.unites) {
      const f = byId.get(n.unites.id);
      if (!f) throw invalid(`node ${n.id}: unites names ${n.unites.id}, which is not a node`);
      if (!f.fanOut) throw invalid(`node ${n.id}: unites ${f.id}, which is no fan-out node (fanOut: true)`);
      if (n.unites.onBranchFailure !== undefined && n.unites.policy === "all-done") {
        throw invalid(`node ${n.id}: onBranchFailure is for an all-success join; an all-done join runs with its failed branches`);
      }
    }
  }
  const back = backEdges(graph, byId);
  const edgeKey = (from: string, to: string) => `${from}>${to}`;
  const preds = new Map<string, string[]>(graph.nodes.map((n) => [n.id, []]));
  for (const n of graph.nodes) for (const next of n.next) if (!back.edges.has(edgeKey(n.id, next))) preds.get(next)!.push(n.id);
  const order = topologicalOrder(graph, preds);
  const roots = order.filter((id) => preds.get(id)!.length === 0);

  const scopes = new Map<string, string[]>();
  const ancestors = new Map<string, Set<string>>();
  for (const id of order) {
    const n = byId.get(id)!;
    const ps = preds.get(id)!;
    const anc = new Set<string>();
    for (const p of ps) {
      anc.add(p);
      for (const a of ancestors.get(p)!) anc.add(a);
    }
    ancestors.set(id, anc);
    const via = ps.map((p) => (byId.get(p)!.fanOut ? [...scopes.get(p)!, p] : scopes.get(p)!));
    if (n.unites) {
      const f = n.unites.id;
      const expected = [...scopes.get(f)!, f];
      for (const [i, s] of via.entries()) {
        if (s.join(">") !== expected.join(">")) {
          throw invalid(`node ${id} unites ${f}, but its predecessor ${ps[i]} does not run directly in ${f}'s branches (unite inner fan-outs first)`);
        }
      }
      scopes.set(id, scopes.get(f)!);
    } else {
      const first = via[0] ?? [];
      for (const [i, s] of via.entries()) {
        if (s.join(">") !== first.join(">")) {
          throw invalid(`node ${id}: its predecessors ${ps[0]} and ${ps[i]} run in different branches; join fan-out branches with unites`);
        }
      }
      scopes.set(id, first);
    }
  }
  for (const n of graph.nodes) {
    if (back.bodies.has(n.id) && (n.fanOut || n.unites)) throw invalid(`node ${n.id} is in a loop: fan-out and unites nodes cannot loop`);
  }
  for (const from of back.from) {
    if (byId.get(from)!.maxIterations === undefined) throw invalid(`node ${from} loops back: give it maxIterations`);
  }

  const repeats = repeating(byId, back.bodies, (from, to) => back.edges.has(edgeKey(from, to)));
  const nodes = new Map<string, CompiledNode>();
  for (const id of order) {
    const n = byId.get(id)!;
    const scope = scopes.get(id)!;
    const ps = preds.get(id)!;
    const inputs = n.inputs ?? defaultInputs(ps);
    let refs: ReturnType<typeof referencesIn>;
    try {
      refs = referencesIn(inputs);
    } catch (err) {
      throw invalid(`node ${id}: ${(err as Error).message}`);
    }
    for (const ref of refs) {
      if (ref.root === "input" || ref.root === "state") continue;
      if (!byId.has(ref.root)) throw invalid(`node ${id}: an expression names ${ref.root}, which is not a node`);
      if (!ancestors.get(id)!.has(ref.root)) throw invalid(`node ${id}: an expression names ${ref.root}, which does not come before it`);
      const refScope = scopes.get(ref.root)!;
      const within = refScope.length <= scope.length && refScope.every((s, i) => scope[i] === s);
      const united = n.unites !== undefined && refScope.join(">") === [...scope, n.unites.id].join(">");
      if (!within && !united) throw invalid(`node ${id}: an expression names ${ref.root}, which runs in branches ${id} does not join`);
    }
    nodes.set(id, {
      node: n,
      queue: queueOfNode(n),
      preds: ps,
      next: n.next.map((next) => ({ id: next, back: back.edges.has(edgeKey(id, next)) })),
      scope,
      ancestors: ancestors.get(id)!,
      inLoop: back.bodies.has(id),
      repeats: repeats.has(id),
      inputs,
    });
  }
  return { graph, nodes, roots, order, topology: topologyOf(nodes, failModes(nodes, order)) };
}

/** A key users put on a node that belongs in its `unites`: told where it goes rather than only that it is unknown. */
function misplaced(input: unknown): void {
  const nodes = (input as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes)) return;
  for (const [i, n] of nodes.entries()) {
    if (n !== null && typeof n === "object" && "onBranchFailure" in n) {
      throw ValidationError.of("graph", `nodes.${i}.onBranchFailure`, "belongs in the node's unites: { id, policy, onBranchFailure }");
    }
  }
}

/** The nodes that can run more than once on one branch: those in a loop body and every node after one. */
function repeating(byId: ReadonlyMap<string, GraphNode>, bodies: ReadonlySet<string>, isBack: (from: string, to: string) => boolean): Set<string> {
  const out = new Set<string>();
  const queue = [...bodies];
  while (queue.length > 0) {
    const id = queue.pop()!;
    if (out.has(id)) continue;
    out.add(id);
    for (const next of byId.get(id)!.next) if (!isBack(id, next)) queue.push(next);
  }
  return out;
}

/**
 * How each node's failure ends the run, when it does: `fail-fast` (at once) or `finish-running`
 * (once nothing else of the run is open); a node absent from the map passes its failure on, because
 * every path from it ends in an `all-done` unites node, which takes the failure in. A failure fails
 * the run when some forward path from the node reaches a node with nothing after it (fail-fast), or
 * an `all-success` unites node (as that join's `onBranchFailure` says); fail-fast wins when both are
 * reachable. Either way nothing else of the run is changed by it (its successors are not created), so
 * `retry()` resumes the run exactly.
 */
function failModes(nodes: ReadonlyMap<string, CompiledNode>, order: readonly string[]): Map<string, BranchFailure> {
  const modes = new Map<string, BranchFailure>();
  const worst = (a: BranchFailure | undefined, b: BranchFailure | undefined): BranchFailure | undefined =>
    a === "fail-fast" || b === "fail-fast" ? "fail-fast" : (a ?? b);
  /** What a failure arriving at a unites node does: nothing (all-done takes it in), or its join's choice. */
  const atJoin = (u: GraphNode): BranchFailure | undefined => (u.unites!.policy === "all-done" ? undefined : (u.unites!.onBranchFailure ?? "fail-fast"));
  for (const id of [...order].reverse()) {
    const c = nodes.get(id)!;
    let mode: BranchFailure | undefined;
    if (c.node.fanOut) {
      // A failed fan-out has no branches: only its unites hear of it.
      const unites = [...nodes.values()].filter((u) => u.node.unites?.id === id);
      if (unites.length === 0) mode = "fail-fast";
      for (const u of unites) mode = worst(mode, atJoin(u.node));
    } else {
      const forward = c.next.filter((e) => !e.back).map((e) => nodes.get(e.id)!);
      if (forward.length === 0) mode = "fail-fast";
      for (const n of forward) mode = worst(mode, n.node.unites ? atJoin(n.node) : modes.get(n.node.id));
    }
    if (mode) modes.set(id, mode);
  }
  return modes;
}

/** What a node gets when its inputs are not written: the run input (first nodes), one predecessor's outputs, or each predecessor's by id. */
function defaultInputs(preds: readonly string[]): JsonValue {
  if (preds.length === 0) return "${{input}}";
  if (preds.length === 1) return `\${{${preds[0]}.outputs}}`;
  return Object.fromEntries(preds.map((p) => [p, `\${{${p}.outputs}}`]));
}

/**
 * The edges that loop back (found by a depth-first walk from the nodes nothing points to), the
 * nodes they leave from, and every node of a loop body.
 */
function backEdges(graph: Graph, byId: ReadonlyMap<string, GraphNode>): { edges: Set<string>; from: Set<string>; bodies: Set<string> } {
  const indegree = new Map(graph.nodes.map((n) => [n.id, 0]));
  for (const n of graph.nodes) for (const next of n.next) indegree.set(next, indegree.get(next)! + 1);
  // A graph that is one loop (every node has a predecessor) starts at its first node.
  const starts = graph.nodes.filter((n) => indegree.get(n.id) === 0).map((n) => n.id);
  if (starts.length === 0) starts.push(graph.nodes[0]!.id);
  const edges = new Set<string>();
  const from = new Set<string>();
  const bodies = new Set<string>();
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (id: string): void => {
    state.set(id, "open");
    stack.push(id);
    for (const next of byId.get(id)!.next) {
      const s = state.get(next);
      if (s === "open") {
        edges.add(`${id}>${next}`);
        from.add(id);
        for (const body of stack.slice(stack.indexOf(next))) bodies.add(body);
      } else if (s === undefined) {
        visit(next);
      }
    }
    stack.pop();
    state.set(id, "done");
  };
  for (const s of starts) visit(s);
  const unreachable = graph.nodes.find((n) => !state.has(n.id));
  if (unreachable) throw invalid(`node ${unreachable.id} cannot be reached from a first node`);
  return { edges, from, bodies };
}

function topologicalOrder(graph: Graph, preds: ReadonlyMap<string, readonly string[]>): string[] {
  const waiting = new Map(graph.nodes.map((n) => [n.id, preds.get(n.id)!.length]));
  const order: string[] = [];
  const ready = graph.nodes.filter((n) => waiting.get(n.id) === 0).map((n) => n.id);
  while (ready.length > 0) {
    const id = ready.shift()!;
    order.push(id);
    for (const n of graph.nodes) {
      if (!preds.get(n.id)!.includes(id)) continue;
      const left = waiting.get(n.id)! - 1;
      waiting.set(n.id, left);
      if (left === 0) ready.push(n.id);
    }
  }
  return order;
}

/**
 * The shape the run's scripts read, per node: `s` its next ([id, 1 if back edge]), `d` its forward
 * in-degree, `f` 1 for a fan-out, `u` the fan-out it unites and `p` the policy, `m` maxIterations,
 * `ff` 1 when its failure fails the run at once, `fr` 1 when it fails the run once nothing else is
 * open (see failModes), `l` 1 when it can run more than once on a branch (see repeating).
 */
function topologyOf(nodes: ReadonlyMap<string, CompiledNode>, failModes: ReadonlyMap<string, BranchFailure>): string {
  const n: Record<string, Record<string, unknown>> = {};
  for (const [id, c] of nodes) {
    n[id] = {
      s: c.next.map((e) => [e.id, e.back ? 1 : 0]),
      d: c.preds.length,
      ...(c.node.fanOut && { f: 1 }),
      ...(c.node.unites && { u: c.node.unites.id, p: c.node.unites.policy }),
      ...(c.node.maxIterations !== undefined && { m: c.node.maxIterations }),
      ...(failModes.get(id) === "fail-fast" && { ff: 1 }),
      ...(failModes.get(id) === "finish-running" && { fr: 1 }),
      ...(c.repeats && { l: 1 }),
    };
  }
  return JSON.stringify({ n });
}
