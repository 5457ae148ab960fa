/** How many characters of a task's input its record keeps for task lists, unless told otherwise. */
export const INPUT_PREVIEW_CHARS = 100;

/**
 * What a task list shows of a task's input: a string input as it is, anything else as its JSON
 * (`json`, when the caller has it already), on one line (runs of whitespace become one space), cut
 * to `maxChars` characters with "…" after. Undefined for a null input, or with `maxChars` 0 (the
 * submitter keeps no preview: an input that must not be shown). Written at submit beside the
 * payload, so listing never reads a payload.
 */
export function inputPreviewOf(input: unknown, maxChars: number = INPUT_PREVIEW_CHARS, json?: string): string | undefined {
  if (input === null || input === undefined || maxChars <= 0) return undefined;
  const text = (typeof input === "string" ? input : (json ?? JSON.stringify(input))).trimStart();
  // Only the head is looked at: a megabyte of input costs no more than its first characters (a
  // character is at most two UTF-16 units, so the head holds maxChars of them).
  const cut = text.length > maxChars * 2 + 16;
  const head = (cut ? text.slice(0, maxChars * 2 + 16) : text).replace(/\s+/g, " ").trim();
  // By code points, so a cut never splits a surrogate pair (an emoji).
  const chars = Array.from(head);
  if (!cut && chars.length <= maxChars) return head;
  return `${chars.slice(0, maxChars).join("").trimEnd()}…`;
}
