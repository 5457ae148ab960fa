// Parsers of command-line values. A value that does not parse is a usage error (exit 2), reported
// by commander as it reports its own.
import type { JsonValue, TaskStatus } from "@flotilla/core";
import { InvalidArgumentError } from "commander";

export const TASK_STATUSES: readonly TaskStatus[] = ["PENDING", "RUNNING", "RETRYING", "WAITING", "COMPLETED", "FAILED", "CANCELLED"];
export const RUN_STATUSES = ["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"] as const;
export const PRIORITIES = ["high", "normal", "low"] as const;

/** How often `--watch` redraws when given no interval. */
export const DEFAULT_WATCH_MS = 2000;
const MIN_WATCH_MS = 100;

/** An integer from `min` up. */
export const integer =
  (min: number, max = Number.MAX_SAFE_INTEGER) =>
  (text: string): number => {
    const n = Number(text);
    if (!/^-?\d+$/.test(text.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(max === Number.MAX_SAFE_INTEGER ? `expected an integer >= ${min}` : `expected an integer from ${min} to ${max}`);
    }
    return n;
  };

/** One of `choices`, in any case; returned as the choice is written. */
export const oneOf =
  <T extends string>(choices: readonly T[]) =>
  (text: string): T => {
    const found = choices.find((c) => c.toLowerCase() === text.trim().toLowerCase());
    if (!found) throw new InvalidArgumentError(`expected one of ${choices.join(", ")}`);
    return found;
  };

/** `--watch [ms]`: the interval, DEFAULT_WATCH_MS when the flag is given alone. */
export function watchInterval(text: string | true): number {
  if (text === true) return DEFAULT_WATCH_MS;
  return integer(MIN_WATCH_MS)(text);
}

/** A JSON value given on the command line. */
export function json(text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch (err) {
    throw new InvalidArgumentError(`not JSON: ${(err as Error).message}`);
  }
}

/**
 * A task id: `<queue>/<name>`, or a bare name in queue "default" (`x` is `default/x`). Its form is
 * checked by the client, which says what is wrong.
 */
export const taskId = (text: string): string => (text.includes("/") ? text : `default/${text}`);
