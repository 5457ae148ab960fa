// What a WAITING task waits for, and the answer from here: approve or reject a tool call that needs
// approval, or send the signal a tool waits for (a JSON payload). A rate limit's wait ends by itself.
import { html } from "htm/preact";
import { useState } from "preact/hooks";
import { post, taskPath } from "./api.ts";
import { json, time } from "./format.ts";
import type { Waiting } from "./types.ts";

/**
 * `onResult` reports what came of an answer to the task's page, which keeps it: the panel goes as
 * soon as the task stops waiting.
 */
export function WaitingPanel({ taskId, waiting, onResult }: { taskId: string; waiting: Waiting; onResult: (result: { ok: boolean; text: string }) => void }) {
  const [busy, setBusy] = useState(false);
  const [payload, setPayload] = useState("");
  const [reason, setReason] = useState("");
  const send = async (body: unknown, done: string) => {
    setBusy(true);
    try {
      await post(taskPath(taskId, "/signal"), { name: waiting.name, payload: body });
      onResult({ ok: true, text: done });
    } catch (err) {
      onResult({ ok: false, text: `not sent: ${(err as Error).message}` });
    } finally {
      setBusy(false);
    }
  };
  const withReason = (approved: boolean) => ({ approved, ...(reason.trim() && { reason: reason.trim() }) });
  const sendSignal = () => {
    let value: unknown = null;
    try {
      value = payload.trim() === "" ? null : JSON.parse(payload);
    } catch {
      onResult({ ok: false, text: "the payload is not JSON" });
      return;
    }
    void send(value, `signal ${waiting.name} sent`);
  };
  return html`<div class="waiting" data-testid="waiting" data-kind=${waiting.kind}>
    <p>
      ${
        waiting.kind === "approval"
          ? html`Waits for approval to run <b class="mono">${waiting.tool ?? "a tool"}</b>`
          : waiting.kind === "signal"
            ? html`Waits for the signal <b class="mono">${waiting.name}</b>`
            : html`Waits for its rate limit (it resumes by itself)`
      }
      ${waiting.timeoutAt ? html` <span class="muted">until ${time(waiting.timeoutAt)}</span>` : null}
    </p>
    ${waiting.args !== undefined ? html`<pre class="small">${json(waiting.args)}</pre>` : null}
    ${waiting.request !== undefined ? html`<pre class="small">${json(waiting.request)}</pre>` : null}
    ${
      waiting.kind === "approval"
        ? html`<div class="toolbar">
            <input data-testid="reason" placeholder="reason (optional)" value=${reason} onInput=${(e: Event) => setReason((e.target as HTMLInputElement).value)} />
            <button data-testid="approve" disabled=${busy} onClick=${() => send(withReason(true), "approved")}>Approve</button>
            <button data-testid="reject" class="danger" disabled=${busy} onClick=${() => send(withReason(false), "rejected")}>Reject</button>
          </div>`
        : waiting.kind === "signal"
          ? html`<div class="toolbar">
              <textarea data-testid="payload" placeholder="payload (JSON; empty: null)" value=${payload} onInput=${(e: Event) => setPayload((e.target as HTMLTextAreaElement).value)}></textarea>
              <button data-testid="send-signal" disabled=${busy} onClick=${sendSignal}>Send ${waiting.name}</button>
            </div>`
          : null
    }
  </div>`;
}
