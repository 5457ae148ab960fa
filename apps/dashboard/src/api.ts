// The gateway's HTTP API, the only thing the dashboard talks to. A bearer token, when the gateway
// wants one, comes once as `?token=` (or from the sign-in form) and is kept in sessionStorage.
import type { TaskEvent } from "./types.ts";

const TOKEN_KEY = "flotilla.token";

/** Takes `?token=` off the address (so it is not bookmarked or shared) into sessionStorage. */
export function adoptTokenFromUrl(): void {
  const url = new URL(window.location.href);
  const token = url.searchParams.get("token");
  if (token === null) return;
  setToken(token);
  url.searchParams.delete("token");
  window.history.replaceState(null, "", url.toString());
}

export const getToken = (): string | null => sessionStorage.getItem(TOKEN_KEY);

export function setToken(token: string | null): void {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** An error answer of the API: its status and `error.code`. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();
/** Called whenever the API answers 401 (no token, or a wrong one). */
export function onUnauthorized(listener: Listener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = getToken();
  return { ...extra, ...(token && { authorization: `Bearer ${token}` }) };
}

async function failure(res: Response): Promise<ApiError> {
  if (res.status === 401) for (const l of unauthorizedListeners) l();
  const body = (await res.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined;
  return new ApiError(res.status, body?.error?.code ?? `HTTP_${res.status}`, body?.error?.message ?? res.statusText);
}

export async function get<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: headers(), ...(signal && { signal }) });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

export async function post<T>(path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method: "POST",
    headers: headers({ "content-type": "application/json" }),
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

export async function del<T>(path: string): Promise<T> {
  const res = await fetch(path, { method: "DELETE", headers: headers() });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as T;
}

/** A task's path: its id with the slash encoded, as the API takes it. */
export const taskPath = (taskId: string, rest = ""): string => `/v1/tasks/${encodeURIComponent(taskId)}${rest}`;

/** One Server-Sent Events message: its `event:` type (when named), its `data:` lines joined, or a comment. */
export interface SseMessage {
  event?: string;
  data?: string;
  comment?: string;
}

/**
 * Opens a Server-Sent Events stream with fetch (EventSource cannot send the Authorization header)
 * and calls `onMessage` for each message and comment. Resolves when the server ends the stream;
 * rejects on a failed answer (an ApiError: a 401 tells the listeners) or when `signal` aborts.
 */
export async function readEventStream(path: string, onMessage: (message: SseMessage) => void, signal: AbortSignal): Promise<void> {
  const res = await fetch(path, { headers: headers({ accept: "text/event-stream" }), signal });
  if (!res.ok || !res.body) throw await failure(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, "\n");
      for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
        const message = parseBlock(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        if (message) onMessage(message);
      }
    }
  } finally {
    // Also when onMessage threw: the connection is closed, not left open behind a released reader.
    reader.cancel().catch(() => {});
  }
}

function parseBlock(block: string): SseMessage | undefined {
  const message: SseMessage = {};
  for (const line of block.split("\n")) {
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
    if (field === "") message.comment = value;
    else if (field === "event") message.event = value;
    else if (field === "data") message.data = message.data === undefined ? value : `${message.data}\n${value}`;
  }
  return message.event === undefined && message.data === undefined && message.comment === undefined ? undefined : message;
}

/**
 * Reads a task's events, calling `onEvent` for each, from the one after `after`. Resolves when the
 * stream ends (after the task's terminal status event); rejects on a failure or when `signal` aborts.
 */
export function streamTaskEvents(taskId: string, after: number, onEvent: (event: TaskEvent) => void, signal: AbortSignal): Promise<void> {
  return readEventStream(
    `${taskPath(taskId, "/events")}?after=${after}`,
    ({ data }) => {
      if (data === undefined) return; // a comment (": ping")
      const parsed = JSON.parse(data) as TaskEvent & { error?: { code?: string; message?: string } };
      // The gateway's own failure (no seq) rather than the task's error event.
      if (typeof parsed.seq !== "number") throw new ApiError(500, parsed.error?.code ?? "STREAM_FAILED", parsed.error?.message ?? "the event stream failed");
      onEvent(parsed);
    },
    signal,
  );
}
