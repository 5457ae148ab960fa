// A bus subscription's dead letters: why each is there, after how many deliveries, its last error,
// the whole letter on demand; Republish (one, or every one) and Purge, which asks first. Polled: the
// bus is not on the live feed.
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { del, get, post } from "./api.ts";
import { ConfirmButton } from "./confirm-button.ts";
import { ago, json } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { BUS_POLL_MS } from "./settings.ts";
import { topicHref } from "./topics.ts";
import type { BusDeadLetter } from "./types.ts";
import { ErrorNote } from "./ui.ts";

interface Outcome {
  ok: boolean;
  text: string;
}

export function BusDeadLetters({ topic, subscription }: { topic: string; subscription: string }) {
  const path = `/v1/topics/${encodeURIComponent(topic)}/subscriptions/${encodeURIComponent(subscription)}/dead-letters`;
  const letters = usePoll((signal) => get<{ deadLetters: BusDeadLetter[] }>(`${path}?limit=100`, signal).then((r) => r.deadLetters), [path], {
    everyMs: BUS_POLL_MS,
  });
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [outcome, setOutcome] = useState<Outcome | undefined>(undefined);

  const act = async (what: string, call: () => Promise<string>) => {
    setBusy(true);
    try {
      setOutcome({ ok: true, text: await call() });
    } catch (err) {
      setOutcome({ ok: false, text: `${what} failed: ${(err as Error).message}` });
    } finally {
      setBusy(false);
      letters.refresh();
    }
  };
  const republish = (ids?: string[]) =>
    act("Republish", async () => {
      const { republished } = await post<{ republished: Record<string, string> }>(`${path}/republish`, ids ? { ids } : {});
      const pairs = Object.entries(republished);
      return pairs.length === 1 ? `Republished ${pairs[0]![0]} as event ${pairs[0]![1]}` : `Republished ${pairs.length} events`;
    });
  const purge = () =>
    act("Purge", async () => {
      const { purged } = await del<{ purged: number }>(path);
      return `Purged ${purged} dead letter${purged === 1 ? "" : "s"}`;
    });

  const list = letters.data ?? [];
  return html`<section>
    <h1>Dead letters of <span class="mono">${subscription}</span></h1>
    <p class="muted">On topic <a href=${topicHref(topic)} class="mono">${topic}</a>. A republished event is a new event of the topic: every subscription gets it, not only this one.</p>
    <div class="toolbar">
      <button data-testid="republish-all" disabled=${busy || list.length === 0} onClick=${() => republish()}>Republish all</button>
      <${ConfirmButton}
        testId="purge"
        label="Purge"
        question=${`Delete all ${list.length} dead letter${list.length === 1 ? "" : "s"} of ${subscription}? Their events are not published again.`}
        disabled=${busy || list.length === 0}
        onConfirm=${purge}
      />
    </div>
    <${ErrorNote} error=${letters.error} />
    ${outcome ? html`<p class=${outcome.ok ? "ok" : "error"} data-testid="bus-dl-outcome">${outcome.text}</p>` : null}
    <table data-testid="bus-dead-letters">
      <thead><tr><th>id</th><th>event</th><th>reason</th><th class="n">deliveries</th><th>failed</th><th>error</th><th></th></tr></thead>
      <tbody>
        ${list.map(
          (l) => html`<tr key=${l.id} data-letter=${l.id}>
              <td class="mono small">${l.id}</td>
              <td class="mono small">${l.eventId}</td>
              <td>${l.reason}</td>
              <td class="n">${l.attempts}</td>
              <td>${ago(l.failedAt)}</td>
              <td class="small">${l.error ? `${l.error.code}: ${l.error.message}` : "—"}</td>
              <td class="actions">
                <button onClick=${() => setOpen(open === l.id ? undefined : l.id)}>${open === l.id ? "Hide" : "Inspect"}</button>
                <button data-testid="republish" disabled=${busy} onClick=${() => republish([l.id])}>Republish</button>
              </td>
            </tr>
            ${open === l.id ? html`<tr class="detail"><td colspan="7"><pre data-testid="bus-dl-detail">${json(l)}</pre></td></tr>` : null}`,
        )}
        ${letters.data?.length === 0 ? html`<tr><td colspan="7" class="muted" data-testid="bus-dl-empty">No dead letters.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
