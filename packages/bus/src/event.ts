import { checkJsonDepth, DEFAULTS, ErrorCodes, FlotillaError, type JsonValue } from "@flotilla/core";
import { type EventMeta, EventMetaSchema } from "./schemas.ts";

/** An event as a handler receives it. */
export interface BusEvent<P extends JsonValue = JsonValue> {
  /** The event's id in its topic's stream (`<ms>-<seq>`): unique per topic, ordered. */
  id: string;
  topic: string;
  payload: P;
  /** When it was published (ms since the epoch, Redis's clock: the id's first part). */
  publishedAt: number;
  correlationId?: string | undefined;
  causationId?: string | undefined;
  source?: string | undefined;
  replyTo?: string | undefined;
  webhook?: string | undefined;
  headers: Record<string, string>;
  /** On a reply: the error the answered event ended with. */
  error?: { code: string; message: string } | undefined;
}

/** A stream entry that is not an event the bus wrote: dead-lettered at once (retrying cannot fix it). */
export class MalformedEventError extends FlotillaError {
  constructor(message: string) {
    super(ErrorCodes.MALFORMED_EVENT, message, { retryable: false });
  }
}

/** The publish time an event id carries. */
export function publishedAtOf(id: string): number {
  return Number(id.slice(0, id.indexOf("-")));
}

/** Reads an entry's fields (`d` payload JSON, `m` metadata JSON) into an event; a MalformedEventError says what is wrong. */
export function decodeEvent(topic: string, id: string, fields: readonly string[]): BusEvent {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!);
  const d = f.get("d");
  if (d === undefined) throw new MalformedEventError(`event ${id} of ${topic} has no payload field "d" (not written by the bus)`);
  let payload: JsonValue;
  let meta: EventMeta;
  try {
    payload = JSON.parse(d) as JsonValue;
    checkJsonDepth(payload, DEFAULTS.maxJsonDepth, "payload");
  } catch (err) {
    throw new MalformedEventError(`event ${id} of ${topic}: its payload is not JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  try {
    const parsed = EventMetaSchema.safeParse(JSON.parse(f.get("m") ?? "{}"));
    if (!parsed.success) throw new Error(parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`).join("; "));
    meta = parsed.data;
  } catch (err) {
    throw new MalformedEventError(`event ${id} of ${topic}: its metadata is not valid (${err instanceof Error ? err.message : String(err)})`);
  }
  return { id, topic, payload, publishedAt: publishedAtOf(id), ...meta, headers: meta.headers ?? {} };
}
