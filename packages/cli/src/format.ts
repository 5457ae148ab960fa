// How human output looks: colour (only on a terminal, never under NO_COLOR), tables, durations and
// times. Nothing here writes: commands build strings and the context prints them.
import pc from "picocolors";

export type Colors = ReturnType<typeof pc.createColors>;

/** The stream a command writes to, as much of it as the output needs. */
export interface OutputStream {
  write(text: string): unknown;
  /** True on a terminal: colour, and `--watch` redraws in place. */
  isTTY?: boolean | undefined;
}

/**
 * Whether to colour what goes to `stream`: only a terminal, and never when NO_COLOR is set (to
 * anything but "") or TERM is "dumb" (https://no-color.org). FORCE_COLOR is not read: a pipe gets plain text.
 */
export function useColor(stream: OutputStream, env: Readonly<Record<string, string | undefined>>): boolean {
  return stream.isTTY === true && !env.NO_COLOR && env.TERM !== "dumb";
}

export const colors = (enabled: boolean): Colors => pc.createColors(enabled);

// biome-ignore lint/suspicious/noControlCharactersInRegex: matching the terminal's escape sequences is the point
const ANSI = /\x1b\[[0-9;]*m/g;

/** How wide `text` is on a terminal (its colour codes take no room). */
export const visibleWidth = (text: string): number => text.replace(ANSI, "").length;

export interface Column {
  header: string;
  /** Numbers read better right-aligned. @default "left" */
  align?: "left" | "right";
}

/**
 * Rows under a header, each column as wide as its widest cell, two spaces apart. `empty` is what
 * is shown instead when there is no row.
 */
export function table(c: Colors, columns: readonly Column[], rows: readonly (readonly string[])[], empty = "(none)"): string {
  if (rows.length === 0) return `${c.dim(empty)}\n`;
  const widths = columns.map((col, i) => Math.max(visibleWidth(col.header), ...rows.map((r) => visibleWidth(r[i] ?? ""))));
  const pad = (text: string, i: number) => {
    const room = " ".repeat(widths[i]! - visibleWidth(text));
    return columns[i]!.align === "right" ? room + text : text + room;
  };
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => pad(cell, i))
      .join("  ")
      .trimEnd();
  return `${[c.bold(line(columns.map((col) => col.header))), ...rows.map(line)].join("\n")}\n`;
}

/** `key: value` lines, keys aligned; undefined values are left out. */
export function fields(c: Colors, pairs: ReadonlyArray<readonly [string, string | undefined]>): string {
  const shown = pairs.filter((p): p is readonly [string, string] => p[1] !== undefined);
  const width = Math.max(0, ...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${c.dim(`${k}:`.padEnd(width + 1))} ${v}`).join("\n") + (shown.length ? "\n" : "");
}

/** A duration for people: 850ms, 12.3s, 4m05s, 2h07m, 3d04h. */
export function duration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "-";
  const abs = Math.abs(ms);
  const sign = ms < 0 ? "-" : "";
  if (abs < 1000) return `${sign}${Math.round(abs)}ms`;
  if (abs < 60_000) return `${sign}${(abs / 1000).toFixed(1)}s`;
  const s = Math.floor(abs / 1000);
  if (s < 3600) return `${sign}${Math.floor(s / 60)}m${String(s % 60).padStart(2, "0")}s`;
  if (s < 86_400) return `${sign}${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, "0")}m`;
  return `${sign}${Math.floor(s / 86_400)}d${String(Math.floor((s % 86_400) / 3600)).padStart(2, "0")}h`;
}

/** A time as ISO 8601 (UTC, to the second), or "-". */
export function time(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return "-";
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** How long ago `ms` was, from `now`: "3.2s ago", or "in 4m05s" for a time to come. */
export function ago(ms: number | undefined, now: number): string {
  if (ms === undefined || !Number.isFinite(ms)) return "-";
  return ms <= now ? `${duration(now - ms)} ago` : `in ${duration(ms - now)}`;
}

/** Task and run statuses in a colour that says how they stand. */
export function status(c: Colors, value: string): string {
  switch (value.toUpperCase()) {
    case "COMPLETED":
    case "SUCCEEDED":
      return c.green(value);
    case "FAILED":
      return c.red(value);
    case "CANCELLED":
      return c.gray(value);
    case "RUNNING":
      return c.cyan(value);
    case "WAITING":
    case "RETRYING":
    case "CANCELLING":
      return c.yellow(value);
    default:
      return value;
  }
}

/** Rules of the default set whose figures are ratios (0.47 reads 47 %) or times (ms). */
const RATIO_RULES = new Set(["failure_rate", "redis_memory_near_limit"]);
const TIME_RULES = new Set(["wait_time_p95"]);

/**
 * An alert's value or threshold in its rule's unit: `47 %` for a ratio, `1m12s` for a time, `612`
 * for a count; a rule of one's own gets its number rounded (`0.467`, `12.35`), never a raw float.
 */
export function alertFigure(rule: string, value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (RATIO_RULES.has(rule)) return `${Number((value * 100).toFixed(1))} %`;
  if (TIME_RULES.has(rule)) return duration(value);
  if (Number.isInteger(value)) return String(value);
  return String(Number(value.toFixed(Math.abs(value) < 1 ? 3 : 2)));
}

/** JSON on one line, cut to `max` characters (for a table cell or a note). */
export function brief(value: unknown, max = 60): string {
  const text = typeof value === "string" ? value : (JSON.stringify(value) ?? String(value));
  const flat = text.replace(/\s+/g, " ");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A list for a table cell: comma-joined, or "-". */
export const list = (items: readonly string[] | undefined): string => (items?.length ? items.join(",") : "-");
