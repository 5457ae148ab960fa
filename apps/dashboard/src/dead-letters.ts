// Dead letters per queue: the reason, the task, its details on demand, and a Requeue button.
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { get, post } from "./api.ts";
import { ago, json } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { navigate } from "./router.ts";
import type { DeadLetter, LiveEvent, QueueOverview } from "./types.ts";
import { ErrorNote, TaskLink, taskHref } from "./ui.ts";

export function DeadLetters({ queue }: { queue: string | undefined }) {
  // A task that fails for good is dead-lettered: its task.finished is the news here.
  const failed = (e: LiveEvent, inQueue?: string) => e.type === "task.finished" && e.status === "FAILED" && (inQueue === undefined || e.queue === inQueue);
  const queues = usePoll((signal) => get<{ queues: QueueOverview[] }>("/v1/queues", signal), [], { live: failed });
  const letters = usePoll(
    (signal) =>
      queue
        ? get<{ deadLetters: DeadLetter[] }>(`/v1/queues/${encodeURIComponent(queue)}/dead-letters?count=100`, signal)
        : Promise.resolve({ deadLetters: [] }),
    [queue],
    { live: (e) => failed(e, queue) },
  );
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [done, setDone] = useState<Record<string, { ok: boolean; text: string; taskId?: string }>>({});

  const requeue = async (letter: DeadLetter) => {
    try {
      const { taskId } = await post<{ taskId: string }>(`/v1/queues/${encodeURIComponent(letter.queue)}/dead-letters/${encodeURIComponent(letter.id)}/requeue`);
      setDone((d) => ({ ...d, [letter.id]: { ok: true, text: "Re-queued", taskId } }));
    } catch (err) {
      setDone((d) => ({ ...d, [letter.id]: { ok: false, text: `Requeue failed: ${(err as Error).message}` } }));
    }
    letters.refresh();
    queues.refresh();
  };

  const requeued = Object.entries(done).filter(([id, r]) => r.ok && !letters.data?.deadLetters.some((l) => l.id === id));

  return html`<section>
    <h1>Dead letters</h1>
    <div class="toolbar">
      <label>Queue <select data-testid="dl-queue" value=${queue ?? ""} onChange=${(e: Event) => navigate(`#/dead-letters/${encodeURIComponent((e.target as HTMLSelectElement).value)}`)}>
        <option value="" disabled>choose…</option>
        ${(queues.data?.queues ?? []).map((q) => html`<option value=${q.queue}>${q.queue} (${q.dead})</option>`)}
      </select></label>
    </div>
    <${ErrorNote} error=${queues.error ?? letters.error} />
    ${
      requeued.length > 0
        ? html`<ul class="ok" data-testid="requeued">
            ${requeued.map(([id, r]) => html`<li key=${id}>Re-queued <a href=${taskHref(r.taskId ?? "")} class="mono">${r.taskId}</a>: it runs again.</li>`)}
          </ul>`
        : null
    }
    ${
      !queue
        ? html`<p class="muted">Choose a queue. ${(queues.data?.queues ?? []).filter((q) => q.dead > 0).map((q) => html` <a href=${`#/dead-letters/${encodeURIComponent(q.queue)}`} class="chip">${q.queue}: ${q.dead}</a>`)}</p>`
        : html`<table data-testid="dead-letters">
            <thead><tr><th>id</th><th>task</th><th>reason</th><th>when</th><th></th></tr></thead>
            <tbody>
              ${(letters.data?.deadLetters ?? []).map(
                (l) => html`<tr key=${l.id} data-letter=${l.id}>
                    <td class="mono small">${l.id}</td>
                    <td>${l.taskId ? html`<${TaskLink} taskId=${l.taskId} />` : "—"}</td>
                    <td>${l.reason}</td>
                    <td>${ago(l.at)}</td>
                    <td class="actions">
                      <button onClick=${() => setOpen(open === l.id ? undefined : l.id)}>${open === l.id ? "Hide" : "Inspect"}</button>
                      <button data-testid="requeue" onClick=${() => requeue(l)}>Requeue</button>
                      ${done[l.id] && !done[l.id]!.ok ? html`<div class="error small">${done[l.id]!.text}</div>` : null}
                    </td>
                  </tr>
                  ${open === l.id ? html`<tr class="detail"><td colspan="5"><pre data-testid="dl-detail">${json(l)}</pre></td></tr>` : null}`,
              )}
              ${letters.data?.deadLetters.length === 0 ? html`<tr><td colspan="5" class="muted" data-testid="dl-empty">No dead letters.</td></tr>` : null}
            </tbody>
          </table>`
    }
  </section>`;
}
