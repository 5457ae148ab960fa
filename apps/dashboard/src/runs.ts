// Graph runs: the list (newest first), reloaded when the live feed says a run started or finished;
// and one run drawn as its graph, with its node instances' states, tasks, outputs and errors,
// reloaded when one of its node tasks changes; Cancel (a running run) and Retry (a FAILED or
// CANCELLED one), each asked once more before it is sent.
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { get, post } from "./api.ts";
import { ConfirmButton } from "./confirm-button.ts";
import { ago, duration, json } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { RunGraph } from "./run-graph.ts";
import { runTopology } from "./run-topology.ts";
import type { LiveEvent, RunCancelOutcome, RunDetail, RunRetried, RunSummary } from "./types.ts";
import { ErrorNote, Status, TaskLink } from "./ui.ts";

/** A node task's name starts with its run's id (`<queue>/<runId>:<node>:<branch>:<n>`). */
const ofRun = (runId: string, e: LiveEvent): boolean => ("taskId" in e && e.taskId.includes(`/${runId}:`)) || (e.type === "run.finished" && e.runId === runId);

/** What a run's cancel did, in words (`POST /v1/runs/{runId}/cancel` answers `cancelled` or `finished`). */
const CANCEL_OUTCOME: Record<RunCancelOutcome["outcome"], (status: string) => string> = {
  cancelled: () => "Cancelled: no node starts any more; running nodes are being stopped (CANCELLING until their workers record it)",
  finished: (status) => `Not cancelled: it had ended already (${status})`,
};
const retryable = (status: string): boolean => status === "FAILED" || status === "CANCELLED";

export function Runs() {
  const [cursors, setCursors] = useState<string[]>([]);
  const cursor = cursors.at(-1);
  const page = usePoll(
    (signal) =>
      get<{ runs: RunSummary[]; cursor?: string; nextCursor?: string }>(`/v1/runs?limit=25${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, signal),
    [cursor],
    { live: (e) => e.type === "run.started" || e.type === "run.finished" },
  );
  const next = page.data?.nextCursor ?? page.data?.cursor;
  return html`<section>
    <h1>Graph runs</h1>
    <div class="toolbar">
      <span class="spacer"></span>
      <button disabled=${cursors.length === 0} onClick=${() => setCursors(cursors.slice(0, -1))}>← Previous</button>
      <button disabled=${!next} onClick=${() => next && setCursors([...cursors, next])}>Next →</button>
    </div>
    <${ErrorNote} error=${page.error} />
    <table data-testid="runs">
      <thead><tr><th>run</th><th>graph</th><th>status</th><th>started</th><th class="n">took</th><th>error</th></tr></thead>
      <tbody>
        ${(page.data?.runs ?? []).map(
          (r) => html`<tr key=${r.runId} data-run=${r.runId}>
            <td><a href=${`#/runs/${encodeURIComponent(r.runId)}`} class="mono">${r.runId}</a></td>
            <td>${r.graph}</td>
            <td><${Status} status=${r.status} /></td>
            <td>${ago(r.createdAt)}</td>
            <td class="n">${r.endedAt ? duration(r.endedAt - r.createdAt) : "—"}</td>
            <td class="small">${r.error ? `${r.error.code}: ${r.error.message}` : ""}</td>
          </tr>`,
        )}
        ${page.data?.runs.length === 0 ? html`<tr><td colspan="6" class="muted">No graph runs.</td></tr>` : null}
      </tbody>
    </table>
  </section>`;
}

export function RunPage({ runId }: { runId: string }) {
  const run = usePoll((signal) => get<RunDetail>(`/v1/runs/${encodeURIComponent(runId)}`, signal), [runId], { live: (e) => ofRun(runId, e) });
  const r = run.data;
  const [selected, setSelected] = useState<string | undefined>(undefined);
  const topology = r ? runTopology(r) : undefined;
  const shown = (r?.nodes ?? []).filter((n) => selected === undefined || n.node === selected);
  const [action, setAction] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const act = async (what: "cancel" | "retry") => {
    setBusy(true);
    setAction(undefined);
    const path = `/v1/runs/${encodeURIComponent(runId)}/${what}`;
    try {
      if (what === "cancel") {
        const res = await post<RunCancelOutcome>(path, { reason: "cancelled from the dashboard" });
        setAction({ ok: true, text: CANCEL_OUTCOME[res.outcome](res.status) });
      } else {
        await post<RunRetried>(path);
        setAction({ ok: true, text: "Retried: its failed, cancelled and unfinished nodes run again; the rest keep their outputs" });
      }
    } catch (err) {
      setAction({ ok: false, text: `${what} failed: ${(err as Error).message}` });
    } finally {
      setBusy(false);
      run.refresh();
    }
  };
  return html`<section>
    <h1>Run <span class="mono">${runId}</span></h1>
    <${ErrorNote} error=${run.error} />
    ${
      r && topology
        ? html`<div class="toolbar">
              <${Status} status=${r.status} testId="run-status" />
              <span class="muted">graph <b>${r.graph}</b> · started ${ago(r.createdAt)}${r.endedAt ? ` · took ${duration(r.endedAt - r.createdAt)}` : ""}</span>
              <span class="spacer"></span>
              <${ConfirmButton}
                testId="cancel-run"
                label="Cancel"
                question="Cancel this run? No node starts any more; running nodes are stopped."
                disabled=${busy || r.status !== "RUNNING"}
                onConfirm=${() => act("cancel")}
              />
              <${ConfirmButton}
                testId="retry-run"
                label="Retry"
                danger=${false}
                question="Retry this run? Its failed, cancelled and unfinished nodes run again."
                disabled=${busy || !retryable(r.status)}
                onConfirm=${() => act("retry")}
              />
            </div>
            ${action ? html`<p class=${action.ok ? "ok" : "error"} data-testid="action-result">${action.text}</p>` : null}
            ${r.error ? html`<p class="error">${r.error.code}: ${r.error.message}${r.error.node ? ` (node ${r.error.node})` : ""}</p>` : null}
            <div class="graph-wrap"><${RunGraph} topology=${topology} instances=${r.nodes} selected=${selected} onSelect=${setSelected} /></div>
            <h2>${selected ? html`Instances of <span class="mono">${selected}</span> <button class="small" onClick=${() => setSelected(undefined)}>all nodes</button>` : "Node instances"}</h2>
            <div class="nodes" data-testid="nodes">
              ${shown.map(
                (n) => html`<div class=${`node s-${n.status.toLowerCase()}`} key=${n.instance} data-node=${n.node} data-status=${n.status}>
                  <div class="node-head"><b>${n.node}</b>${n.branch.length > 0 ? html` <span class="muted">[${n.branch.join(".")}]</span>` : null} <${Status} status=${n.status} /></div>
                  <div class="small"><${TaskLink} taskId=${n.taskId} /></div>
                  ${n.output !== undefined ? html`<details><summary>output</summary><pre>${json(n.output)}</pre></details>` : null}
                  ${n.error !== undefined ? html`<pre class="error small">${json(n.error)}</pre>` : null}
                </div>`,
              )}
            </div>`
        : null
    }
  </section>`;
}
