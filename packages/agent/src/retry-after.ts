// How long a provider asks to be left alone after a 429 or 503: OpenAI's `retry-after-ms`, else
// the standard `Retry-After` (seconds, or an HTTP date).

/** Longest wait a turn takes from a provider's Retry-After before retrying; a longer ask is cut to this. */
export const MAX_RETRY_AFTER_MS = 60_000;

/**
 * The wait (ms) a response's headers ask for before the next request, or undefined when they ask
 * for none that can be read. `headers` as the AI SDK keeps them (lower-case names); `now` is what
 * an HTTP date is counted from.
 */
export function retryAfterMs(headers: Readonly<Record<string, string | undefined>> | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = decimal(headers["retry-after-ms"]);
  if (ms !== undefined) return Math.ceil(ms);
  const value = headers["retry-after"]?.trim();
  if (!value) return undefined;
  const delay = decimal(value);
  if (delay !== undefined) return Math.ceil(delay * 1000);
  // An HTTP date names its day and month; Date.parse alone would take "-3" for a year.
  const date = /[a-z]{3}/i.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** A non-negative decimal number, or undefined. */
function decimal(value: string | undefined): number | undefined {
  if (value === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(value)) return undefined;
  return Number(value);
}
