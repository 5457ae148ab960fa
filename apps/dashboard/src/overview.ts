// The fleet at a glance: every queue with its depth and throughput sparklines (those live workers
// serve and no one has submitted to yet as well), the workers alive and the alerts firing; reloaded
// when the live feed says a task or a worker changed.
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

/** A queue row: the gateway's figures, or none yet (a queue live workers serve that no task was submitted to), and how many live workers serve it. */
interface QueueRow {
  queue: string;
  figures: QueueOverview | undefined;
  served: number;
}

/** Every queue with figures, and every queue a live worker serves: a worker's queue shows before its first task. */
export function queueRows(queues: readonly QueueOverview[], workers: Workers | undefined): QueueRow[] {
  const served = new Map<string, number>();
  for (const w of workers?.workers ?? []) if (w.alive) for (const q of w.queues ?? []) served.set(q, (served.get(q) ?? 0) + 1);
  const rows = new Map<string, QueueRow>(queues.map((q) => [q.queue, { queue: q.queue, figures: q, served: served.get(q.queue) ?? 0 }]));
  for (const [queue, n] of served) if (!rows.has(queue)) rows.set(queue, { queue, figures: undefined, served: n });
  return [...rows.values()].sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}

/** The recent outcomes in words: "3 completed, 1 failed in 5 min" (the ones that happened), or "none in 5 min". */
export function outcomesText(recent: QueueOverview["recent"]): string {
  const parts = (
    [
      [recent.completed, "completed"],
      [recent.failed, "failed"],
      [recent.cancelled, "cancelled"],
    ] as const
  )
    .filter(([n]) => n > 0)
    .map(([n, what]) => `${n} ${what}`);
  return `${parts.length > 0 ? parts.join(", ") : "none ended"} in the last ${duration(recent.windowMs)}`;
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
  const rows = queues.data ? queueRows(queues.data, workers.data) : undefined;

  return html`<section>
    <h1>Overview</h1>
    <div class="cards">
      <div class="card" data-testid="card-queues"><div class="num">${rows?.length ?? "…"}</div><div>queues</div></div>
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
          <th class="n">dead</th><th class="n">oldest wait</th><th class="n">workers</th><th>depth</th><th>throughput (ended/min)</th>
        </tr>
      </thead>
      <tbody>
        ${(rows ?? []).map(({ queue, figures: q, served }) => {
          const s = history.get(queue);
          const link = html`<a href=${`#/queues/${encodeURIComponent(queue)}`}>${queue}</a>`;
          if (!q)
            return html`<tr key=${queue} data-queue=${queue} data-served-only>
              <td>${link}</td>
              <td class="n">0</td><td>0 / 0 / 0</td><td class="n">0</td><td class="n">0</td><td class="n">0</td><td class="n">—</td>
              <td class="n">${served}</td>
              <td colspan="2" class="muted small">served, nothing submitted yet</td>
            </tr>`;
          return html`<tr key=${queue} data-queue=${queue}>
            <td>${link}</td>
            <td class="n">${q.waiting}</td>
            <td>${q.lanes.high ?? 0} / ${q.lanes.normal ?? 0} / ${q.lanes.low ?? 0}</td>
            <td class="n">${q.inFlight}</td>
            <td class="n">${q.delayed}</td>
            <td class="n">${q.dead > 0 ? html`<a href=${`#/dead-letters/${encodeURIComponent(queue)}`} class="bad">${q.dead}</a>` : 0}</td>
            <td class="n">${q.oldestWaitMs > 0 ? duration(q.oldestWaitMs) : "—"}</td>
            <td class=${`n ${served === 0 && q.waiting > 0 ? "bad" : ""}`} title=${served === 0 ? "No live worker serves this queue" : ""}>${served}</td>
            <td><${Sparkline} values=${s?.depth ?? []} label=${`${queue} depth`} /></td>
            <td>
              <${Sparkline} values=${s?.throughput ?? []} label=${`${queue} throughput`} />
              <span class="muted small" data-testid="outcomes"> ${outcomesText(q.recent)}</span>
            </td>
          </tr>`;
        })}
        ${rows?.length === 0 ? html`<tr><td colspan="10" class="muted">No queue yet: start a worker, or submit a task.</td></tr>` : null}
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
