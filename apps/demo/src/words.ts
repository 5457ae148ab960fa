// How the demo's closing lines say things: text cut at a word, never mid-word; a cancel's outcome in words.

/** `text` whole when it fits in `max` characters, else its words that fit and "…". */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max).lastIndexOf(" ");
  return `${(cut > 0 ? flat.slice(0, cut) : flat.slice(0, max - 1)).replace(/[\s,.;:]+$/, "")}…`;
}

/** What `handle.cancel()`'s outcome means for the task. */
export const CANCEL_OUTCOME: Record<"cancelled" | "requested" | "finished" | "missing", string> = {
  cancelled: "it had not started, and never will",
  requested: "its worker stops it",
  finished: "it had ended already",
  missing: "no such task",
};
