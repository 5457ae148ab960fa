// One task, live: its record (reloaded when the live feed says it changed), and its events over Server-Sent Events: the status timeline,
// the text as it is generated, tool calls and their results; its result or error; Cancel and Retry.
import { html } from "htm/preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { get, post, streamTaskEvents, taskPath } from "./api.ts";
import { delayedUntil, duration, json, time } from "./format.ts";
import { usePoll } from "./hooks.ts";
import { isTerminal, type Task, type TaskEvent } from "./types.ts";
import { ErrorNote, Status } from "./ui.ts";
import { WaitingPanel } from "./waiting.ts";

/** What a cancel did, in words (`POST /v1/tasks/{id}/cancel` answers `cancelled`, `requested` or `finished`). */
const CANCEL_OUTCOME: Record<string, string> = {
  cancelled: "Cancelled: it was waiting and will never run",
  requested: "Cancel requested: its worker is stopping it",
  finished: "Not cancelled: it had ended already",
};

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

/**
 * The task's events, from the first: streamed until the terminal status, then (a retry or a requeue
 * runs it again) streamed on from the last seq whenever the record's seq moves past it.
 */
function useTaskEvents(taskId: string): { events: TaskEvent[]; live: boolean; error: Error | undefined } {
  const [events, setEvents] = useState<TaskEvent[]>([]);
  const [live, setLive] = useState(false);
  const [error, setError] = useState<Error | undefined>(undefined);
  useEffect(() => {
    setEvents([]);
    const ac = new AbortController();
    let after = 0;
    // Deltas arrive fast: batched into one render per animation frame.
    let pending: TaskEvent[] = [];
    let frame = 0;
    const flush = () => {
      frame = 0;
      const batch = pending;
      pending = [];
      setEvents((prev) => [...prev, ...batch]);
    };
    const onEvent = (e: TaskEvent) => {
      if (e.seq <= after) return;
      after = e.seq;
      pending.push(e);
      frame ||= requestAnimationFrame(flush);
    };
    (async () => {
      let first = true;
      while (!ac.signal.aborted) {
        if (!first) {
          await sleep(1500, ac.signal);
          if (ac.signal.aborted) return;
          // Only reconnect when there is something new (a retry, or a stream cut short).
          const record = await get<Task>(taskPath(taskId), ac.signal).catch(() => undefined);
          if (!record || (record.seq <= after && isTerminal(record.status))) continue;
        }
        first = false;
        try {
          setLive(true);
          await streamTaskEvents(taskId, after, onEvent, ac.signal);
          setError(undefined);
        } catch (err) {
          if (!ac.signal.aborted) setError(err as Error);
        } finally {
          setLive(false);
        }
      }
    })();
    return () => {
      ac.abort();
      cancelAnimationFrame(frame);
    };
  }, [taskId]);
  return { events, live, error };
}

export function TaskPage({ taskId }: { taskId: string }) {
  const { events, live, error: streamError } = useTaskEvents(taskId);
  const task = usePoll((signal) => get<Task>(taskPath(taskId), signal), [taskId], { live: (e) => "taskId" in e && e.taskId === taskId });
  const [action, setAction] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  // A status event says the record changed: fetch it now rather than at the next poll.
  const statusCount = events.filter((e) => e.type === "status").length;
  const refresh = task.refresh;
  useEffect(() => {
    if (statusCount > 0) refresh();
  }, [statusCount, refresh]);

  const textRef = useRef<HTMLPreElement>(null);
  const latestAttempt = Math.max(0, ...events.map((e) => e.attempt));
  const text = events
    .filter((e) => e.type === "text")
    .filter((e) => e.attempt === latestAttempt)
    .map((e) => e.delta)
    .join("");
  useEffect(() => {
    const el = textRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [text]);

  const t = task.data;
  const act = async (what: "cancel" | "retry") => {
    setBusy(true);
    setAction(undefined);
    try {
      const res = await post<{ outcome?: string; taskId: string }>(
        taskPath(taskId, `/${what}`),
        what === "cancel" ? { reason: "cancelled from the dashboard" } : undefined,
      );
      setAction({ ok: true, text: what === "cancel" ? (CANCEL_OUTCOME[res.outcome ?? ""] ?? `Cancel: ${res.outcome}`) : "Re-queued: it runs again" });
    } catch (err) {
      setAction({ ok: false, text: `${what} failed: ${(err as Error).message}` });
    } finally {
      setBusy(false);
      task.refresh();
    }
  };

  const statuses = events.filter((e) => e.type === "status");
  const tools = events.filter((e) => e.type === "tool_call" || e.type === "tool_result");
  const errors = events.filter((e) => e.type === "error");
  const usage = events.findLast((e) => e.type === "usage") as (TaskEvent & { totalTokens?: number; inputTokens?: number; outputTokens?: number }) | undefined;
  const resultText = t?.result && typeof t.result === "object" && "text" in t.result ? String((t.result as { text: unknown }).text) : undefined;
  // The result's text is what streamed above, most of the time: then it is not shown twice.
  const resultShown = resultText !== undefined && resultText !== text;

  return html`<section>
    <h1>Task <span class="mono">${taskId}</span></h1>
    <${ErrorNote} error=${task.error} />
    ${
      t
        ? html`<div class="toolbar">
            <${Status} status=${t.status} testId="task-status" />
            ${delayedUntil(t) ? html`<span class="muted" data-testid="run-at">${delayedUntil(t)}</span>` : null}
            <span class="muted">agent <b>${t.agent}</b> · queue <a href=${`#/queues/${encodeURIComponent(t.queue)}`}>${t.queue}</a> · attempt ${t.attempt} · ${t.priority}</span>
            <span class="spacer"></span>
            <button data-testid="cancel" class="danger" disabled=${busy || isTerminal(t.status)} onClick=${() => act("cancel")}>Cancel</button>
            <button data-testid="retry" disabled=${busy || t.status !== "FAILED"} onClick=${() => act("retry")}>Retry</button>
          </div>
          ${action ? html`<p class=${action.ok ? "ok" : "error"} data-testid="action-result">${action.text}</p>` : null}
          ${
            t.status === "WAITING" && t.waiting
              ? html`<${WaitingPanel}
                  taskId=${taskId}
                  waiting=${t.waiting}
                  onResult=${(result: { ok: boolean; text: string }) => {
                    setAction(result);
                    task.refresh();
                  }}
                />`
              : null
          }
          <dl class="facts">
            <dt>created</dt><dd>${time(t.createdAt)}</dd>
            <dt>started</dt><dd>${time(t.startedAt)}</dd>
            <dt>ended</dt><dd>${time(t.completedAt)}</dd>
            <dt>took</dt><dd>${t.startedAt && t.completedAt ? duration(t.completedAt - t.startedAt) : "—"}</dd>
            <dt>worker</dt><dd class="mono">${t.workerId ?? "—"}</dd>
            <dt>retries</dt><dd>${t.retries} of ${t.maxRetries}</dd>
            ${usage ? html`<dt>tokens</dt><dd>${usage.inputTokens ?? 0} in · ${usage.outputTokens ?? 0} out</dd>` : null}
          </dl>`
        : null
    }

    <div class="grid2">
      <div>
        <h2>Output ${live ? html`<span class="live" data-testid="live">● live</span>` : null}</h2>
        <pre class="stream" data-testid="live-text" ref=${textRef}>${text}${live && t?.status === "RUNNING" ? html`<span class="caret">▍</span>` : null}</pre>
        ${
          t?.status === "COMPLETED"
            ? html`<h3>Result</h3>
              ${resultShown ? html`<p class="result" data-testid="result-text">${resultText}</p>` : null}
              <details data-testid="result-json"><summary>${resultText !== undefined && !resultShown ? "The output above, as JSON" : "JSON"}</summary><pre>${json(t.result)}</pre></details>`
            : null
        }
        ${t?.error ? html`<h3>Error</h3><p class="error" data-testid="task-error"><b>${t.error.code}</b> ${t.error.message}</p>` : null}
        <${ErrorNote} error=${streamError} />
      </div>
      <div>
        <h2>Timeline</h2>
        <ol class="timeline" data-testid="timeline">
          ${statuses.map(
            (e) => html`<li key=${e.seq}>
              <span class="muted small">${time(e.ts)}</span> <${Status} status=${(e.status ?? "").toUpperCase()} />
              <span class="muted small">attempt ${e.attempt ?? "?"}${e.workerId ? ` on ${e.workerId}` : ""}</span>
              ${e.error ? html`<div class="error small">${e.error.code}: ${e.error.message}</div>` : null}
            </li>`,
          )}
          ${errors.map((e) => html`<li key=${e.seq}><span class="muted small">${time(e.ts)}</span> <span class="badge s-failed">error</span> ${e.code}: ${e.message}</li>`)}
        </ol>
        <h2>Tool calls</h2>
        ${
          tools.length === 0
            ? html`<p class="muted">None.</p>`
            : html`<ul class="tools" data-testid="tools">
                ${tools.map(
                  (e) => html`<li key=${e.seq}>
                    ${e.type === "tool_call" ? html`<b>→ ${e.name}</b> <code>${json(e.args)}</code>` : html`<b class=${e.isError ? "bad" : ""}>← ${e.name}</b> <code>${json(e.result)}</code>`}
                  </li>`,
                )}
              </ul>`
        }
      </div>
    </div>
  </section>`;
}
