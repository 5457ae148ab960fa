// A queue's tasks, newest first: filter by status, page on with the API's cursor. Reloaded when the
// live feed says a task (of this queue) was submitted or changed status.
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { get } from "./api.ts";
import { ago, delayedUntil, duration } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { navigate } from "./router.ts";
import { TASK_STATUSES, type Task } from "./types.ts";
import { ErrorNote, Status, TaskLink } from "./ui.ts";

const PAGE = 25;

/** A delayed task's start beside its PENDING, so it does not read as stuck. */
const delayedOf = (t: Task) => {
  const text = delayedUntil(t);
  return text ? html` <span class="muted small" data-testid="run-at">${text}</span>` : null;
};

export function Tasks({ queue, status }: { queue: string | undefined; status: string | undefined }) {
  // Cursors of the pages before this one (for Previous), and this page's.
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = usePoll(
    (signal) => {
      const q = new URLSearchParams({ limit: String(PAGE) });
      if (queue) q.set("queue", queue);
      if (status) q.set("status", status);
      if (cursor) q.set("cursor", cursor);
      return get<{ tasks: Task[]; nextCursor?: string }>(`/v1/tasks?${q}`, signal);
    },
    [queue, status, cursor],
    { live: (e) => "taskId" in e && (!queue || e.queue === queue) },
  );
  const base = queue ? `#/queues/${encodeURIComponent(queue)}` : "#/tasks";
  const setStatus = (s: string) => {
    setCursors([]);
    navigate(s ? `${base}?status=${s}` : base);
  };

  return html`<section>
    <h1>${queue ? html`Queue <span class="mono">${queue}</span>` : "Tasks"}</h1>
    <div class="toolbar">
      <label>Status <select data-testid="status-filter" value=${status ?? ""} onChange=${(e: Event) => setStatus((e.target as HTMLSelectElement).value)}>
        <option value="">any</option>
        ${TASK_STATUSES.map((s) => html`<option value=${s}>${s}</option>`)}
      </select></label>
      ${queue ? html`<a href=${`#/dead-letters/${encodeURIComponent(queue)}`}>dead letters</a>` : null}
      <span class="spacer"></span>
      <button disabled=${cursors.length === 0} onClick=${() => setCursors(cursors.slice(0, -1))}>← Previous</button>
      <span class="muted">page ${cursors.length + 1}</span>
      <button data-testid="next-page" disabled=${!page.data?.nextCursor} onClick=${() => page.data?.nextCursor && setCursors([...cursors, page.data.nextCursor])}>Next →</button>
    </div>
    <${ErrorNote} error=${page.error} />
    <table data-testid="tasks">
      <thead><tr><th>task</th><th>status</th><th>agent</th><th>input</th><th class="n">attempt</th><th>created</th><th class="n">took</th><th>worker</th></tr></thead>
      <tbody>
        ${(page.data?.tasks ?? []).map(
          (t) => html`<tr key=${t.taskId} data-task=${t.taskId}>
            <td><${TaskLink} taskId=${t.taskId} /></td>
            <td><${Status} status=${t.status} />${delayedOf(t)}</td>
            <td>${t.agent}</td>
            <td class="preview mono small" title=${t.inputPreview ?? ""} data-testid="input-preview">${t.inputPreview ?? html`<span class="muted">—</span>`}</td>
            <td class="n">${t.attempt}</td>
            <td>${ago(t.createdAt)}</td>
            <td class="n">${t.startedAt && t.completedAt ? duration(t.completedAt - t.startedAt) : "—"}</td>
            <td class="mono small">${t.workerId ?? "—"}</td>
          </tr>`,
        )}
        ${page.data?.tasks.length === 0 ? html`<tr><td colspan="8" class="muted">No tasks.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
