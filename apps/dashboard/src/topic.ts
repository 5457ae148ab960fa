// One topic of the event bus: its subscriptions with their progress and counts, and its newest
// events (an entry the bus cannot read is shown with why). Polled: the bus is not on the live feed.
import { html } from "htm/preact";
import { get } from "./api.ts";
import { ago } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { BUS_POLL_MS } from "./settings.ts";
import { SubscriptionCells, SubscriptionHeaders, subscriptionHref } from "./topics.ts";
import type { BusEvent, TopicStats } from "./types.ts";
import { ErrorNote } from "./ui.ts";

const EVENTS = 20;

/** A payload on one line, cut short (its whole JSON is the cell's title). */
function Payload({ value }: { value: unknown }) {
  const text = JSON.stringify(value) ?? "";
  return html`<code title=${text}>${text.length > 120 ? `${text.slice(0, 119)}…` : text}</code>`;
}

export function TopicPage({ topic }: { topic: string }) {
  const path = `/v1/topics/${encodeURIComponent(topic)}`;
  const stats = usePoll((signal) => get<TopicStats>(path, signal), [topic], { everyMs: BUS_POLL_MS });
  const events = usePoll((signal) => get<{ events: BusEvent[] }>(`${path}/events?limit=${EVENTS}`, signal).then((r) => r.events), [topic], {
    everyMs: BUS_POLL_MS,
  });
  const t = stats.data;
  return html`<section>
    <h1>Topic <span class="mono">${topic}</span></h1>
    <p class="muted"><a href="#/topics">All topics</a>${t ? ` · ${t.length} held · ${t.published} published` : ""}</p>
    <${ErrorNote} error=${stats.error ?? events.error} />
    <h2>Subscriptions</h2>
    <table data-testid="subscriptions">
      <thead><tr><${SubscriptionHeaders} /><th class="n">delivered</th><th class="n">acked</th><th class="n">retried</th><th class="n">reclaimed</th></tr></thead>
      <tbody>
        ${(t?.groups ?? []).map(
          (g) => html`<tr key=${g.name} data-subscription=${g.name}>
            <td><a href=${subscriptionHref(topic, g.name)}>${g.name}</a></td>
            <${SubscriptionCells} topic=${topic} group=${g} />
            <td class="n">${g.counts.delivered}</td>
            <td class="n">${g.counts.acked}</td>
            <td class="n">${g.counts.retried}</td>
            <td class="n">${g.counts.reclaimed}</td>
          </tr>`,
        )}
        ${t?.groups.length === 0 ? html`<tr><td colspan="10" class="muted">No subscriptions.</td></tr>` : null}
      </tbody>
    </table>
    <h2>Newest events</h2>
    <table data-testid="events">
      <thead><tr><th>id</th><th>published</th><th>correlation</th><th>payload</th></tr></thead>
      <tbody>
        ${(events.data ?? []).map(
          (e) => html`<tr key=${e.id} data-event=${e.id}>
            <td class="mono small">${e.id}</td>
            <td>${ago(e.publishedAt)}</td>
            <td class="mono small">${"malformed" in e ? "" : (e.correlationId ?? "")}</td>
            <td>${"malformed" in e ? html`<span class="error">malformed: ${e.malformed}</span>` : html`<${Payload} value=${e.payload} />`}</td>
          </tr>`,
        )}
        ${events.data?.length === 0 ? html`<tr><td colspan="4" class="muted">No events held.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
