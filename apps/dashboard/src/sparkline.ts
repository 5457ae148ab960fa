import { html } from "htm/preact";

/** A hand-drawn SVG line of `values` (oldest first), scaled to its own maximum. */
export function Sparkline({ values, width = 120, height = 28, label }: { values: readonly number[]; width?: number; height?: number; label: string }) {
  const max = Math.max(1, ...values);
  const step = values.length > 1 ? width / (values.length - 1) : width;
  const points = values.map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`).join(" ");
  const last = values.at(-1);
  return html`<svg class="spark" width=${width} height=${height} viewBox="0 0 ${width} ${height}" role="img" aria-label=${label}>
    <title>${label}</title>
    <line x1="0" y1=${height - 2} x2=${width} y2=${height - 2} class="spark-base" />
    ${values.length > 1 ? html`<polyline points=${points} class="spark-line" />` : null}
    ${last !== undefined ? html`<circle cx=${values.length > 1 ? width : 0} cy=${height - 2 - (last / max) * (height - 4)} r="2" class="spark-dot" />` : null}
  </svg>`;
}
