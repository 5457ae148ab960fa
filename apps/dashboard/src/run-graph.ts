// A run drawn as its graph: a box per node, coloured by its instances' state, stacked with a count
// when the node ran more than once (a fan-out's branches, a loop); arrows for the edges, loops back
// as arcs underneath. Hand-drawn SVG on graph-layout.ts.
import { html } from "htm/preact";
import { DEFAULT_LAYOUT, layoutGraph } from "./graph-layout.ts";
import { nodeState, type Topology } from "./run-topology.ts";
import type { RunNode } from "./types.ts";

const { nodeWidth: W, nodeHeight: H } = DEFAULT_LAYOUT;
/** How far each box of a stack sits behind the one in front. */
const STACK = 4;

export function RunGraph({
  topology,
  instances,
  selected,
  onSelect,
}: {
  topology: Topology;
  instances: readonly RunNode[];
  selected: string | undefined;
  onSelect: (node: string | undefined) => void;
}) {
  const layout = layoutGraph(topology.nodes, topology.edges);
  const byNode = new Map<string, RunNode[]>();
  for (const i of instances) byNode.set(i.node, [...(byNode.get(i.node) ?? []), i]);
  return html`<svg
    class="run-graph"
    data-testid="run-graph"
    width=${layout.width}
    height=${layout.height}
    viewBox="0 0 ${layout.width} ${layout.height}"
    role="img"
    aria-label="the run's graph"
  >
    <defs>
      <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
        <path d="M0,0 L10,5 L0,10 z" class="gedge-head" />
      </marker>
    </defs>
    ${layout.edges.map(
      (e) =>
        html`<path key=${`${e.from}>${e.to}`} class=${`gedge${e.back ? " back" : ""}`} d=${e.d} marker-end="url(#arrow)" data-edge=${`${e.from}>${e.to}`} />`,
    )}
    ${layout.nodes.map((p) => {
      const mine = byNode.get(p.id) ?? [];
      const { status, counts } = nodeState(mine);
      const summary = mine.length <= 1 ? status.toLowerCase() : counts.map(([s, n]) => `${n} ${s.toLowerCase()}`).join(" · ");
      const stacked = Math.min(2, mine.length - 1);
      return html`<g
        key=${p.id}
        class=${`gnode s-${status.toLowerCase()}${selected === p.id ? " selected" : ""}`}
        transform="translate(${p.x},${p.y})"
        data-node=${p.id}
        data-status=${status}
        data-count=${mine.length}
        onClick=${() => onSelect(selected === p.id ? undefined : p.id)}
      >
        <title>${p.id}: ${mine.length === 0 ? "not reached" : counts.map(([s, n]) => `${n} ${s}`).join(", ")}</title>
        ${Array.from({ length: stacked }, (_, k) => html`<rect class="gstack" x=${(stacked - k) * STACK} y=${-(stacked - k) * STACK} width=${W} height=${H} rx="6" />`)}
        <rect class="gbox" width=${W} height=${H} rx="6" />
        <text x="10" y="21" class="glabel">${p.id}</text>
        <text x="10" y="40" class="gsub">${mine.length === 0 ? "not reached" : summary}</text>
        ${
          mine.length > 1
            ? html`<g class="gbadge" data-testid="instances-badge"><rect x=${W - 34} y="-9" width="40" height="18" rx="9" /><text x=${W - 14} y="4" text-anchor="middle">×${mine.length}</text></g>`
            : null
        }
      </g>`;
    })}
  </svg>`;
}
