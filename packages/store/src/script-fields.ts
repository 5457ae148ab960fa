/**
 * The rows the store's scripts take and give, field by field, in the order the Lua reads or builds
 * them. The TS side encodes arguments and decodes replies from these lists only; a test checks each
 * against its script (the header's list, the `unpack` that reads it, the reply it builds).
 */

/** create-8.lua, per task (ARGV[7..]). */
export const CREATE_TASK_FIELDS = [
  "name",
  "agent",
  "payload",
  "detailed",
  "maxRetries",
  "timeoutMs",
  "metadata",
  "maxDeliveries",
  "backoff",
  "runIn",
  "lane",
  "submitId",
  "trace",
  "handoff",
  "concurrencyKey",
  "concurrencyLimit",
  "signature",
  "inputPreview",
] as const;

/** start-5.lua, per entry (ARGV[9..]). */
export const START_ENTRY_FIELDS = ["lane", "entryId", "name"] as const;

/** settle-12.lua, per outcome (ARGV[16..]). */
export const SETTLE_OUTCOME_FIELDS = [
  "lane",
  "entryId",
  "name",
  "attempt",
  "status",
  "result",
  "errorJson",
  "retryIn",
  "release",
  "deadReason",
  "usage",
  "waiting",
  "resume",
] as const;

/** includes/startEntry.lua: a `run` reply after its leading 'run' (then RUN_REPLY_OPTIONAL's, by name). */
export const RUN_REPLY_FIELDS = ["lane", "entryId", "name", "attempt", "payload", "agent", "waitedMs"] as const;

/** includes/startEntry.lua's RUN_OPTIONAL: the fields a `run` reply carries as name, value pairs, when the record has them. */
export const RUN_REPLY_OPTIONAL = [
  "timeoutMs",
  "detailed",
  "metadata",
  "retries",
  "maxRetries",
  "backoff",
  "trace",
  "resume",
  "signal",
  "signature",
  "inbox",
] as const;

export type Row<F extends readonly string[]> = { readonly [K in F[number]]: string | number };

/** Appends `row`'s values in the order of `fields`. */
export function encodeRow<F extends readonly string[]>(fields: F, row: Row<F>, out: Array<string | number>): void {
  for (const f of fields) out.push(row[f as F[number]]);
}

/** Reads a reply row's values (from `offset`) back into an object keyed by `fields`. */
export function decodeRow<F extends readonly string[]>(fields: F, values: readonly unknown[], offset = 0): { [K in F[number]]: string } {
  const out = {} as Record<string, string>;
  for (let i = 0; i < fields.length; i++) {
    const v = values[offset + i];
    out[fields[i]!] = v === null || v === undefined ? "" : String(v);
  }
  return out as { [K in F[number]]: string };
}
