// What a tool returned, made JSON before it goes anywhere: a tool's `execute` is typed to return
// JSON, but JavaScript lets it return anything, and its result becomes a `tool_result` event (kept
// and replayed by every `stream()`) and a message for the model. Both must be valid JSON, or the
// stored event fails its schema on every later read. No I/O: the Temporal activities use it too.
import { checkJsonDepth, DEFAULTS, ErrorCodes, type JsonValue } from "@flotilla/core";
import type { ToolOutput } from "./steps.ts";

/** JSON.stringify's rule, plus BigInt (which it refuses) as its decimal string. */
const replacer = (_key: string, value: unknown): unknown => (typeof value === "bigint" ? value.toString() : value);

/**
 * A tool's return value as JSON, the way JSON.stringify writes it: `undefined`, functions and
 * symbols are left out of objects and become null in arrays (and at the top), Dates and anything
 * else with `toJSON` are written as that gives, NaN and ±Infinity become null, a Map or a Set
 * becomes `{}`, a BigInt its decimal string. A value JSON cannot hold at all — a circular
 * reference, a `toJSON` that throws, nesting deeper than DEFAULTS.maxJsonDepth — becomes an error
 * result for the model instead (`[TOOL_RESULT_INVALID] …`): the run carries on, as after any tool
 * error.
 */
export function toolOutputOf(toolName: string, value: unknown): ToolOutput {
  let result: JsonValue;
  try {
    const text = JSON.stringify(value, replacer);
    result = text === undefined ? null : (JSON.parse(text) as JsonValue);
    checkJsonDepth(result, DEFAULTS.maxJsonDepth, "result");
  } catch (err) {
    const why = err instanceof RangeError ? `nested too deep (${err.message})` : err instanceof Error ? err.message : String(err);
    return { result: invalidResult(toolName, why), isError: true };
  }
  return { result, isError: false };
}

function invalidResult(toolName: string, why: string): string {
  // V8's circular-structure message runs over several lines naming constructors: its first is enough.
  const first = why.split("\n", 1)[0]!.replace(/^invalid result: result: /, "");
  return `[${ErrorCodes.TOOL_RESULT_INVALID}] tool "${toolName}" returned a value that is not JSON (${first}); nothing of it was kept`;
}
