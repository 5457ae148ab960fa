// The event bus: every topic with its figures and, under it, each subscription's progress (pending,
// lag, retrying, dead letters). The bus is not on the live feed, so the page polls (BUS_POLL_MS).
import { html } from "htm/preact";
import { get } from "./api.ts";
import { usePoll } from "./hooks.ts";
import { BUS_POLL_MS } from "./settings.ts";
import type { BusSubscription, TopicStats } from "./types.ts";
import { ErrorNote } from "./ui.ts";

export const topicHref = (topic: string): string => `#/topics/${encodeURIComponent(topic)}`;
export const subscriptionHref = (topic: string, name: string): string => `${topicHref(topic)}/${encodeURIComponent(name)}`;

/** A subscription's progress cells: consumers, pending, lag, retrying, and its dead letters (linked). */
export function SubscriptionCells({ topic, group }: { topic: string; group: BusSubscription }) {
  return html`<td class="n">${group.consumers}</td>
    <td class="n" data-col="pending">${group.pending}</td>
    <td class="n" data-col="lag">${group.lag ?? "?"}</td>
    <td class="n" data-col="retrying">${group.retrying}</td>
    <td class="n" data-col="dead"><a href=${subscriptionHref(topic, group.name)} class=${group.deadLetters > 0 ? "bad" : ""} title="Its dead letters">${group.deadLetters}</a></td>`;
}

export function SubscriptionHeaders() {
  return html`<th>subscription</th><th class="n">consumers</th><th class="n">pending</th><th class="n" title="Events not yet delivered to it">lag</th><th class="n">retrying</th><th class="n">dead</th>`;
}

export function Topics() {
  const topics = usePoll((signal) => get<{ topics: TopicStats[] }>("/v1/topics", signal).then((r) => r.topics), [], { everyMs: BUS_POLL_MS });
  return html`<section>
    <h1>Topics</h1>
    <p class="muted small">The event bus: each topic's events held and published, and per subscription what it has not settled yet. Every subscription gets every event.</p>
    <${ErrorNote} error=${topics.error} />
    <table data-testid="topics">
      <thead><tr><th>topic</th><th class="n">held</th><th class="n">published</th><${SubscriptionHeaders} /></tr></thead>
      <tbody>
        ${(topics.data ?? []).map((t) => {
          const topicCells = (span: number) =>
            html`<td rowspan=${span}><a href=${topicHref(t.topic)} class="mono">${t.topic}</a></td><td class="n" rowspan=${span}>${t.length}</td><td class="n" rowspan=${span}>${t.published}</td>`;
          if (t.groups.length === 0)
            return html`<tr key=${t.topic} data-topic=${t.topic}>${topicCells(1)}<td colspan="6" class="muted">no subscriptions</td></tr>`;
          return t.groups.map(
            (g, i) => html`<tr key=${`${t.topic}/${g.name}`} data-topic=${t.topic} data-subscription=${g.name}>
              ${i === 0 ? topicCells(t.groups.length) : null}
              <td><a href=${subscriptionHref(t.topic, g.name)}>${g.name}</a></td>
              <${SubscriptionCells} topic=${t.topic} group=${g} />
            </tr>`,
          );
        })}
        ${topics.data?.length === 0 ? html`<tr><td colspan="9" class="muted">No topics: nothing published or subscribed yet.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}
