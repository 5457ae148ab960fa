// The fleet's workers: what state each is in (and why, when it is not ready), what it runs and
// which build; reloaded when the live feed says a worker joined, left or changed state, or a task
// started or ended on one.
import { html } from "htm/preact";
import { get } from "./api.ts";
import { ago } from "./format.ts";
import { usePoll } from "./hooks.ts";
import type { LiveEvent, WorkerInfo, Workers } from "./types.ts";
import { ErrorNote, TaskLink } from "./ui.ts";

const changesWorkers = (e: LiveEvent): boolean => e.type.startsWith("worker.") || e.type === "task.started" || e.type === "task.finished";

/** What a worker is doing: its own state while it beats; dead once it stopped beating (its last record may still say running). */
export function workerState(w: WorkerInfo): string {
  if (!w.alive) return "dead";
  return w.state ?? "alive";
}

const STATE_CLASS: Record<string, string> = {
  running: "s-running",
  alive: "s-running",
  starting: "s-pending",
  draining: "s-waiting",
  "not-ready": "s-failed",
  dead: "s-dead",
};

function WorkerStateCell({ worker }: { worker: WorkerInfo }) {
  const state = workerState(worker);
  // Reasons say why a live worker does not claim; a dead one's are stale.
  const reasons = worker.alive ? (worker.reasons ?? []) : [];
  return html`<span class=${`badge ${STATE_CLASS[state] ?? ""}`} data-testid="worker-state" data-state=${state}>${state}</span>
    ${reasons.map(
      (r) => html`<div class="small reason" data-testid="worker-reason" data-reason=${r.reason}>
        <b>${r.reason}</b>: ${r.detail} <span class="muted">(since ${ago(r.since)})</span>
      </div>`,
    )}`;
}

export function WorkersPage() {
  const fleet = usePoll((signal) => get<Workers>("/v1/workers", signal), [], { live: changesWorkers });
  const f = fleet.data;
  return html`<section>
    <h1>Workers</h1>
    <p data-testid="workers-summary">${f ? `${f.live} alive, ${f.dead} dead, ${f.running} tasks running` : "…"}</p>
    <${ErrorNote} error=${fleet.error} />
    <table data-testid="workers">
      <thead><tr><th>worker</th><th>state</th><th>version</th><th>build</th><th>queues</th><th class="n">concurrency</th><th>running</th><th class="n">done</th><th class="n">failed</th><th>up since</th><th>last beat</th></tr></thead>
      <tbody>
        ${(f?.workers ?? []).map(
          (w) => html`<tr key=${w.workerId} class=${w.alive ? "" : "dead"} data-worker=${w.workerId}>
            <td class="mono">${w.workerId}${w.hostname ? html`<div class="muted small">${w.hostname}${w.pid ? `:${w.pid}` : ""}</div>` : null}</td>
            <td><${WorkerStateCell} worker=${w} /></td>
            <td class="mono small" data-testid="worker-version">${w.version ?? "—"}</td>
            <td class="mono small" data-testid="worker-build">${w.buildId ?? "—"}</td>
            <td>${(w.queues ?? []).map((q) => html`<a href=${`#/queues/${encodeURIComponent(q)}`} class="chip">${q}</a>`)}</td>
            <td class="n">${w.concurrency ?? "—"}</td>
            <td>${(w.running ?? []).length === 0 ? html`<span class="muted">idle</span>` : (w.running ?? []).map((id) => html`<div><${TaskLink} taskId=${id} /></div>`)}</td>
            <td class="n">${w.completed ?? "—"}</td>
            <td class="n">${w.failed ?? "—"}</td>
            <td>${ago(w.startedAt)}</td>
            <td>${ago(w.lastBeat)}</td>
          </tr>`,
        )}
        ${f?.workers.length === 0 ? html`<tr><td colspan="11" class="muted">No worker has reported.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
