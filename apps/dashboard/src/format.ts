// Small formatting helpers.

/** "3 s ago", "2 min ago", … from a timestamp (ms). */
export function ago(ts: number | undefined, now = Date.now()): string {
  if (!ts) return "—";
  return `${duration(Math.max(0, now - ts))} ago`;
}

/** 850 ms, 3.2 s, 4 min, 2 h. */
export function duration(ms: number | undefined): string {
  if (ms === undefined) return "—";
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

export const time = (ts: number | undefined): string => (ts ? new Date(ts).toLocaleTimeString() : "—");

/** "in 4 min": how long until a time (ms), "now" once it passed. */
export const until = (ts: number, now = Date.now()): string => (ts > now ? `in ${duration(ts - now)}` : "now");

/** A delayed task's start: when a PENDING task's `runAt` is still ahead, "runs at 12:00:01 (in 4 min)"; else undefined. */
export function delayedUntil(task: { status: string; runAt?: number }, now = Date.now()): string | undefined {
  if (task.status !== "PENDING" || task.runAt === undefined || task.runAt <= now) return undefined;
  return `runs at ${time(task.runAt)} (${until(task.runAt, now)})`;
}

export const json = (value: unknown): string => JSON.stringify(value, null, 2);

/** The CSS class of a status badge. */
export const statusClass = (status: string): string => `badge s-${status.toLowerCase()}`;
