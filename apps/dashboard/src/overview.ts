// The fleet at a glance: every queue with its depth and throughput sparklines, the workers alive and
// the alerts firing; reloaded when the live feed says a task or a worker changed.
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { get } from "./api.ts";
import { ago, duration, statusClass } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { Sparkline } from "./sparkline.ts";
import type { Alert, LiveEvent, QueueOverview, Workers } from "./types.ts";
import { ErrorNote } from "./ui.ts";

/** Samples kept per queue (2 minutes at one every 2 s). */
const SAMPLES = 60;
/** A sample of every queue's figures (as last loaded) every 2 s: the lines' steps stay even however the loads come. */
const SAMPLE_MS = 2000;

interface Series {
  /** Tasks that ended (completed, failed or cancelled) over the queue's recent window, scaled to a minute. */
  throughput: number[];
  /** Waiting plus in flight. */
  depth: number[];
}

// Kept for the page's life, so the lines survive going to another page and back.
const history = new Map<string, Series>();

function record(queues: readonly QueueOverview[]): void {
  for (const q of queues) {
    const s = history.get(q.queue) ?? { throughput: [], depth: [] };
    const { completed, failed, cancelled, windowMs } = q.recent;
    s.throughput.push(((completed + failed + cancelled) * 60_000) / Math.max(1, windowMs));
    s.depth.push(q.waiting + q.inFlight);
    if (s.throughput.length > SAMPLES) s.throughput.shift();
    if (s.depth.length > SAMPLES) s.depth.shift();
    history.set(q.queue, s);
  }
}

/** Where an alert fires: its queue, linked; "*" is a rule about the whole fleet (no_worker_alive), no queue to link to. */
const alertWhere = (a: Alert) => (a.queue === "*" ? "the fleet" : html`<a href=${`#/queues/${encodeURIComponent(a.queue)}`}>${a.queue}</a>`);

export function Overview() {
  // Every task and worker event moves some figure here (a run's are its nodes' task events); the
  // loads they ask for are coalesced. Alerts are not on the feed, but their rules (a backlog, no
  // worker alive) follow the tasks and workers.
  const live = { live: (e: LiveEvent) => !e.type.startsWith("run.") };
  const queues = usePoll((signal) => get<{ queues: QueueOverview[] }>("/v1/queues", signal).then((r) => r.queues), [], live);
  const workers = usePoll((signal) => get<Workers>("/v1/workers", signal), [], live);
  const alerts = usePoll((signal) => get<{ events: Alert[]; firing: Alert[] }>("/v1/alerts", signal), [], live);
  const latest = useRef<QueueOverview[] | undefined>(undefined);
  latest.current = queues.data;
  // Redraws the lines after each sample (the history lives outside the component).
  const [, setSamples] = useState(0);
  const loaded = queues.data !== undefined;
  useEffect(() => {
    if (!loaded) return;
    const sample = () => {
      record(latest.current ?? []);
      setSamples((n) => n + 1);
    };
    sample();
    const timer = setInterval(sample, SAMPLE_MS);
    return () => clearInterval(timer);
  }, [loaded]);
  const firing = alerts.data?.firing ?? [];

  return html`<section>
    <h1>Overview</h1>
    <div class="cards">
      <div class="card" data-testid="card-queues"><div class="num">${queues.data?.length ?? "…"}</div><div>queues</div></div>
      <div class="card" data-testid="card-workers">
        <div class="num">${workers.data?.live ?? "…"}</div>
        <div>workers alive${workers.data && workers.data.dead > 0 ? html` <span class="muted">(${workers.data.dead} dead)</span>` : null}</div>
      </div>
      <div class="card"><div class="num">${workers.data?.running ?? "…"}</div><div>tasks running</div></div>
      <div class=${`card ${firing.length > 0 ? "card-alert" : ""}`} data-testid="card-alerts"><div class="num">${alerts.data ? firing.length : "…"}</div><div>alerts firing</div></div>
    </div>
    <${ErrorNote} error=${queues.error ?? workers.error ?? alerts.error} />

    <h2>Queues</h2>
    <table data-testid="queues">
      <thead>
        <tr>
          <th>queue</th><th class="n">waiting</th><th>lanes (high/normal/low)</th><th class="n">in flight</th><th class="n">delayed</th>
          <th class="n">dead</th><th class="n">oldest wait</th><th>depth</th><th>throughput (ended/min)</th>
        </tr>
      </thead>
      <tbody>
        ${(queues.data ?? []).map((q) => {
          const s = history.get(q.queue);
          return html`<tr key=${q.queue} data-queue=${q.queue}>
            <td><a href=${`#/queues/${encodeURIComponent(q.queue)}`}>${q.queue}</a></td>
            <td class="n">${q.waiting}</td>
            <td>${q.lanes.high ?? 0} / ${q.lanes.normal ?? 0} / ${q.lanes.low ?? 0}</td>
            <td class="n">${q.inFlight}</td>
            <td class="n">${q.delayed}</td>
            <td class="n">${q.dead > 0 ? html`<a href=${`#/dead-letters/${encodeURIComponent(q.queue)}`} class="bad">${q.dead}</a>` : 0}</td>
            <td class="n">${q.oldestWaitMs > 0 ? duration(q.oldestWaitMs) : "—"}</td>
            <td><${Sparkline} values=${s?.depth ?? []} label=${`${q.queue} depth`} /></td>
            <td>
              <${Sparkline} values=${s?.throughput ?? []} label=${`${q.queue} throughput`} />
              <span class="muted small"> ${q.recent.completed}✓ ${q.recent.failed}✗ ${q.recent.cancelled}⊘ / ${duration(q.recent.windowMs)}</span>
            </td>
          </tr>`;
        })}
        ${queues.data?.length === 0 ? html`<tr><td colspan="9" class="muted">No queue yet: submit a task.</td></tr>` : null}
      </tbody>
    </table>

    <h2>Alerts firing</h2>
    ${
      firing.length === 0
        ? html`<p class="muted" data-testid="no-alerts">None.</p>`
        : html`<ul class="alerts">
            ${firing.map(
              (a) => html`<li key=${a.id}>
                <span class=${statusClass(a.severity)}>${a.severity}</span> <b>${a.rule}</b> on ${alertWhere(a)}: ${a.message} <span class="muted">(since ${ago(a.since)})</span>
              </li>`,
            )}
          </ul>`
    }
  </section>`;
}
