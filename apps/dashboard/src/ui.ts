import { html } from "htm/preact";
import { ApiError } from "./api.ts";
import { statusClass } from "./format.ts";

export function ErrorNote({ error }: { error: Error | undefined }) {
  if (!error) return null;
  const code = error instanceof ApiError ? `${error.code}: ` : "";
  return html`<p class="error" role="alert">${code}${error.message}</p>`;
}

export function Status({ status, testId }: { status: string; testId?: string }) {
  return html`<span class=${statusClass(status)} data-status=${status} data-testid=${testId}>${status}</span>`;
}

export const taskHref = (taskId: string): string => `#/task/${encodeURIComponent(taskId)}`;

export function TaskLink({ taskId }: { taskId: string }) {
  return html`<a href=${taskHref(taskId)} class="mono">${taskId}</a>`;
}
