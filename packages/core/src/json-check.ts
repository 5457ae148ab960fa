import { ValidationError } from "./errors.ts";

/** How much of a value `checkJson` checks: everything JSON cannot carry, or only circular references. */
export interface CheckJsonOptions {
  /**
   * The name the reported path starts with: `"input"` reports `input.amount`; `""` reports the path
   * alone, for a value whose keys are fields of their own (the options). @default what
   */
  root?: string;
  /** `"cycles"`: only circular references (a value zod checks field by field after). @default everything */
  only?: "cycles";
}

/**
 * Throws a ValidationError naming the first place in `value` that JSON cannot carry, and why:
 * `input.amount: a BigInt is not JSON`. zod's `z.json()` refuses the same values but reports one
 * union failure at the root ("Invalid input"), and JSON.stringify drops some silently (undefined,
 * functions, symbols), turns others into something else (a Date into a string, a Map into `{}`,
 * NaN into null) or throws a bare TypeError (a BigInt, a cycle). Recursive: run checkJsonDepth
 * first, as every caller does, so the depth is bounded. Shared references that form no loop are
 * fine: JSON writes them twice.
 */
export function checkJson(value: unknown, what: string, options: CheckJsonOptions = {}): void {
  const root = options.root ?? what;
  const keys: string[] = [];
  const found = walk(value, keys, new Map(), options.only === "cycles");
  if (found === undefined) return;
  const name = (path: readonly string[]): string => [root, ...path].filter((k) => k !== "").join(".") || what;
  const reason =
    typeof found === "number"
      ? `circular reference: ${[what, ...keys].join(".")} refers back to ${[what, ...keys.slice(0, found)].join(".")}; only JSON values can be sent`
      : found;
  throw ValidationError.of(what, name(keys), reason);
}

/**
 * Depth-first over plain objects and arrays. Returns why the value at `keys` is not JSON, or the
 * depth of the ancestor it refers back to (a cycle); undefined when the whole value is JSON.
 */
function walk(value: unknown, keys: string[], depthOf: Map<object, number>, cyclesOnly: boolean): string | number | undefined {
  if (typeof value !== "object" || value === null) return cyclesOnly ? undefined : scalarProblem(value);
  const ancestor = depthOf.get(value);
  if (ancestor !== undefined) return ancestor;
  if (!cyclesOnly) {
    const problem = objectProblem(value);
    if (problem !== undefined) return problem;
  }
  depthOf.set(value, keys.length);
  const entries: Array<[string, unknown]> = Array.isArray(value) ? arrayEntries(value) : Object.entries(value);
  for (const [key, child] of entries) {
    keys.push(key);
    const found = walk(child, keys, depthOf, cyclesOnly);
    if (found !== undefined) return found;
    keys.pop();
  }
  depthOf.delete(value);
  return undefined;
}

/** An array's slots, holes included (JSON.stringify writes a hole as null, zod refuses it). */
function arrayEntries(array: readonly unknown[]): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (let i = 0; i < array.length; i++) entries.push([String(i), array[i]]);
  return entries;
}

function scalarProblem(value: unknown): string | undefined {
  if (value === null) return undefined;
  switch (typeof value) {
    case "string":
    case "boolean":
      return undefined;
    case "number":
      return Number.isFinite(value) ? undefined : `${value} is not JSON (JSON numbers are finite)`;
    case "bigint":
      return "a BigInt is not JSON (send it as a string, or as a number when it fits)";
    case "undefined":
      return "undefined is not JSON (leave the key out, or send null)";
    case "function":
      return "a function is not JSON";
    case "symbol":
      return "a Symbol is not JSON";
    default:
      return `a ${typeof value} is not JSON`;
  }
}

/** Only plain objects (of Object's prototype or none) and arrays are JSON; class instances are not. */
function objectProblem(value: object): string | undefined {
  if (Array.isArray(value)) return undefined;
  const proto = Object.getPrototypeOf(value);
  if (proto === Object.prototype || proto === null) return undefined;
  if (value instanceof Date) return "a Date is not JSON (send date.toISOString() or date.getTime())";
  if (value instanceof Map) return "a Map is not JSON (send Object.fromEntries(map))";
  if (value instanceof Set) return "a Set is not JSON (send [...set])";
  const name = (proto as { constructor?: { name?: unknown } }).constructor?.name;
  const kind = typeof name === "string" && name !== "" ? name : "class instance";
  return `${/^[AEIO]/.test(kind) ? "an" : "a"} ${kind} is not JSON (send a plain object)`;
}
