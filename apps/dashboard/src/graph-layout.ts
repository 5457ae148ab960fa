// A layered left-to-right layout of a directed graph, for a run's nodes: loops' back edges set
// aside, each node in the layer after its furthest predecessor (longest path), the nodes of a layer
// ordered by where their neighbours sit (a few barycenter sweeps, so edges cross less), then boxes
// placed on a grid and edges drawn as curves. Pure: nodes and edges in, coordinates out.

export interface LayoutOptions {
  nodeWidth: number;
  nodeHeight: number;
  /** Between layers (columns). */
  gapX: number;
  /** Between the nodes of a layer. */
  gapY: number;
  /** Around the drawing (room for fan-out stacks and loop arcs). */
  pad: number;
}

export const DEFAULT_LAYOUT: LayoutOptions = { nodeWidth: 168, nodeHeight: 52, gapX: 64, gapY: 28, pad: 24 };

export interface PlacedNode {
  id: string;
  layer: number;
  /** Its top-left corner. */
  x: number;
  y: number;
}

export interface PlacedEdge {
  from: string;
  to: string;
  /** Goes back against the layers (a loop): drawn as an arc under the boxes. */
  back: boolean;
  /** An SVG path. */
  d: string;
}

export interface Layout {
  nodes: PlacedNode[];
  edges: PlacedEdge[];
  width: number;
  height: number;
}

/** Lays out `nodes` (ids, in a preferred order) and `edges` ([from, to]; unknown ids are ignored, duplicates drawn once). */
export function layoutGraph(nodes: readonly string[], edges: ReadonlyArray<readonly [string, string]>, options: LayoutOptions = DEFAULT_LAYOUT): Layout {
  const ids = [...new Set(nodes)];
  const known = new Set(ids);
  const unique = new Map<string, [string, string]>();
  for (const [from, to] of edges) if (known.has(from) && known.has(to)) unique.set(`${from}\u0000${to}`, [from, to]);
  const all = [...unique.values()];
  const back = backEdges(ids, all);
  const forward = all.filter((e) => !back.has(e));
  const layerOf = longestPathLayers(ids, forward);
  const layers = orderLayers(ids, forward, layerOf);
  return place(layers, all, back, options);
}

/** The edges that close a cycle, found depth-first from each node in order: without them the graph is acyclic. */
function backEdges(ids: readonly string[], edges: ReadonlyArray<[string, string]>): Set<[string, string]> {
  const out = new Map<string, Array<[string, string]>>();
  for (const e of edges) out.set(e[0], [...(out.get(e[0]) ?? []), e]);
  const state = new Map<string, "open" | "done">();
  const back = new Set<[string, string]>();
  for (const root of ids) {
    if (state.has(root)) continue;
    // Iterative, so a long chain cannot overflow the stack: [node, index of its next edge].
    const stack: Array<[string, number]> = [[root, 0]];
    state.set(root, "open");
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const edge = (out.get(top[0]) ?? [])[top[1]++];
      if (!edge) {
        state.set(top[0], "done");
        stack.pop();
        continue;
      }
      const seen = state.get(edge[1]);
      if (seen === "open") back.add(edge);
      else if (seen === undefined) {
        state.set(edge[1], "open");
        stack.push([edge[1], 0]);
      }
    }
  }
  return back;
}

/** Each node's layer: 0 without predecessors, else one past its furthest predecessor (edges must be acyclic). */
function longestPathLayers(ids: readonly string[], edges: ReadonlyArray<[string, string]>): Map<string, number> {
  const indegree = new Map(ids.map((id) => [id, 0]));
  const out = new Map<string, string[]>();
  for (const [from, to] of edges) {
    indegree.set(to, indegree.get(to)! + 1);
    out.set(from, [...(out.get(from) ?? []), to]);
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  const ready = ids.filter((id) => indegree.get(id) === 0);
  for (let i = 0; i < ready.length; i++) {
    const id = ready[i]!;
    for (const next of out.get(id) ?? []) {
      layer.set(next, Math.max(layer.get(next)!, layer.get(id)! + 1));
      indegree.set(next, indegree.get(next)! - 1);
      if (indegree.get(next) === 0) ready.push(next);
    }
  }
  return layer;
}

/** The layers' nodes, ordered: first as given, then sorted a few times by the mean position of their neighbours. */
function orderLayers(ids: readonly string[], edges: ReadonlyArray<[string, string]>, layerOf: ReadonlyMap<string, number>): string[][] {
  const layers: string[][] = [];
  for (const id of ids) {
    const layer = layerOf.get(id)!;
    layers[layer] = [...(layers[layer] ?? []), id];
  }
  const preds = new Map<string, string[]>();
  const succs = new Map<string, string[]>();
  for (const [from, to] of edges) {
    preds.set(to, [...(preds.get(to) ?? []), from]);
    succs.set(from, [...(succs.get(from) ?? []), to]);
  }
  const position = new Map<string, number>();
  const index = () => {
    for (const layer of layers) for (const [i, id] of (layer ?? []).entries()) position.set(id, i);
  };
  const sortBy = (layer: string[], neighbours: ReadonlyMap<string, string[]>) => {
    const key = new Map(
      layer.map((id, i) => {
        const ps = (neighbours.get(id) ?? []).map((n) => position.get(n)!);
        // A node with no neighbour on that side keeps its place.
        return [id, ps.length === 0 ? i : ps.reduce((a, b) => a + b, 0) / ps.length];
      }),
    );
    layer.sort((a, b) => key.get(a)! - key.get(b)!);
  };
  index();
  for (let sweep = 0; sweep < 4; sweep++) {
    const down = sweep % 2 === 0;
    const order = down ? layers.keys() : [...layers.keys()].reverse();
    for (const i of order) {
      if (!layers[i]) continue;
      sortBy(layers[i], down ? preds : succs);
      index();
    }
  }
  return layers.map((layer) => layer ?? []);
}

function place(layers: string[][], edges: ReadonlyArray<[string, string]>, back: ReadonlySet<[string, string]>, o: LayoutOptions): Layout {
  const tallest = Math.max(1, ...layers.map((l) => l.length));
  const columnHeight = tallest * o.nodeHeight + (tallest - 1) * o.gapY;
  const nodes: PlacedNode[] = [];
  const at = new Map<string, PlacedNode>();
  for (const [layer, ids] of layers.entries()) {
    // Each column centred on the tallest.
    const top = o.pad + (columnHeight - (ids.length * o.nodeHeight + (ids.length - 1) * o.gapY)) / 2;
    for (const [i, id] of ids.entries()) {
      const node = { id, layer, x: o.pad + layer * (o.nodeWidth + o.gapX), y: top + i * (o.nodeHeight + o.gapY) };
      nodes.push(node);
      at.set(id, node);
    }
  }
  // Room under the columns for loops' arcs.
  const arcRoom = back.size > 0 ? 40 : 0;
  const height = 2 * o.pad + columnHeight + arcRoom;
  const placed = edges.map((edge) => {
    const [from, to] = edge;
    const a = at.get(from)!;
    const b = at.get(to)!;
    const isBack = back.has(edge);
    return { from, to, back: isBack, d: isBack ? arc(a, b, o, o.pad + columnHeight + arcRoom - 8) : curve(a, b, o) };
  });
  return { nodes, edges: placed, width: 2 * o.pad + layers.length * o.nodeWidth + Math.max(0, layers.length - 1) * o.gapX, height };
}

/** From the right side of `a` to the left side of `b`. */
function curve(a: PlacedNode, b: PlacedNode, o: LayoutOptions): string {
  const x1 = a.x + o.nodeWidth;
  const y1 = a.y + o.nodeHeight / 2;
  const x2 = b.x;
  const y2 = b.y + o.nodeHeight / 2;
  const bend = Math.max(24, (x2 - x1) / 2);
  return `M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`;
}

/** From the bottom of `a` down to `floor` and back up into the bottom of `b` (a loop back, or a node to itself). */
function arc(a: PlacedNode, b: PlacedNode, o: LayoutOptions, floor: number): string {
  const x1 = a.x + o.nodeWidth * 0.6;
  const x2 = b.x + o.nodeWidth * 0.4;
  const y1 = a.y + o.nodeHeight;
  const y2 = b.y + o.nodeHeight;
  return `M${x1},${y1} C${x1},${floor} ${x2},${floor} ${x2},${y2}`;
}
