import { ValidationError } from "@flotilla/core";

export interface Position {
  score: number;
  id: string;
}

/** Opaque page cursors: the (time, id) of the last task a page looked at. */
export function encodeCursor(p: Position): string {
  return Buffer.from(`${p.score}:${p.id}`).toString("base64url");
}

export function decodeCursor(cursor: string | undefined): Position | undefined {
  if (!cursor) return undefined;
  const text = Buffer.from(cursor, "base64url").toString();
  const i = text.indexOf(":");
  const score = Number(text.slice(0, i));
  if (i <= 0 || !Number.isFinite(score) || i === text.length - 1) {
    throw new ValidationError("list options", [{ path: "cursor", message: "not a cursor returned by listTasks" }]);
  }
  return { score, id: text.slice(i + 1) };
}
