// The fleet's workers: alive or dead, their queues, what they run. Polled every 2 s.
import { html } from "htm/preact";
import { get } from "./api.ts";
import { ago } from "./format.ts";
import { usePoll } from "./hooks.ts";
import type { Workers } from "./types.ts";
import { ErrorNote, TaskLink } from "./ui.ts";

export function WorkersPage() {
  const fleet = usePoll((signal) => get<Workers>("/v1/workers", signal), 2000);
  const f = fleet.data;
  return html`<section>
    <h1>Workers</h1>
    <p data-testid="workers-summary">${f ? `${f.live} alive, ${f.dead} dead, ${f.running} tasks running` : "…"}</p>
    <${ErrorNote} error=${fleet.error} />
    <table data-testid="workers">
      <thead><tr><th>worker</th><th>state</th><th>queues</th><th class="n">concurrency</th><th>running</th><th class="n">done</th><th class="n">failed</th><th>up since</th><th>last beat</th></tr></thead>
      <tbody>
        ${(f?.workers ?? []).map(
          (w) => html`<tr key=${w.workerId} class=${w.alive ? "" : "dead"}>
            <td class="mono">${w.workerId}</td>
            <td><span class=${w.alive ? "badge s-completed" : "badge s-failed"}>${w.alive ? "alive" : "dead"}</span></td>
            <td>${(w.queues ?? []).map((q) => html`<a href=${`#/queues/${encodeURIComponent(q)}`} class="chip">${q}</a>`)}</td>
            <td class="n">${w.concurrency ?? "—"}</td>
            <td>${(w.running ?? []).length === 0 ? html`<span class="muted">idle</span>` : (w.running ?? []).map((id) => html`<div><${TaskLink} taskId=${id} /></div>`)}</td>
            <td class="n">${w.completed ?? "—"}</td>
            <td class="n">${w.failed ?? "—"}</td>
            <td>${ago(w.startedAt)}</td>
            <td>${ago(w.lastBeat)}</td>
          </tr>`,
        )}
        ${f?.workers.length === 0 ? html`<tr><td colspan="9" class="muted">No worker has reported.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
