import type { JsonValue } from "@flotilla/core";

/** One `${{ … }}` reference: the run's input or state, or a node's outputs, and the path under it. */
export interface Reference {
  /** `input`, `state`, or a node id. */
  root: string;
  /** Property names below it (after `outputs` for a node). */
  path: string[];
}

/**
 * What a unites node sees of a node in the branches it joins: one value per branch, in branch order.
 * A path under it applies to each item (`${{proc.outputs.v}}` is the list of every branch's `v`).
 */
export class BranchValues {
  readonly items: ReadonlyArray<JsonValue | undefined>;
  constructor(items: ReadonlyArray<JsonValue | undefined>) {
    this.items = items;
  }
}

type Looked = JsonValue | BranchValues | undefined;

const EXPRESSION = /\$\{\{\s*([^}]*?)\s*\}\}/g;
const WHOLE = /^\$\{\{\s*([^}]*?)\s*\}\}$/;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

/** Parses the text inside `${{ }}`; a malformed one is an Error naming it. */
export function parseReference(text: string): Reference {
  const parts = text.split(".");
  const [root, ...rest] = parts;
  if (!root || !parts.every((p) => SEGMENT.test(p))) throw new Error(`"\${{${text}}}" is not an expression: use input.x, state.x or <node>.outputs.x`);
  if (root === "input" || root === "state") return { root, path: rest };
  if (rest[0] !== "outputs") throw new Error(`"\${{${text}}}" names node ${root} without .outputs: use ${root}.outputs or ${root}.outputs.<field>`);
  return { root, path: rest.slice(1) };
}

/** Every reference in a node's inputs (strings anywhere inside them). */
export function referencesIn(value: JsonValue | undefined): Reference[] {
  const out: Reference[] = [];
  const walk = (v: JsonValue | undefined): void => {
    if (typeof v === "string") {
      for (const m of v.matchAll(EXPRESSION)) out.push(parseReference(m[1]!));
    } else if (Array.isArray(v)) {
      for (const item of v) walk(item);
    } else if (v && typeof v === "object") {
      for (const item of Object.values(v)) walk(item);
    }
  };
  walk(value);
  return out;
}

/** The value under `path` (undefined where it stops); for branch values, the list of each item's. */
function at(value: Looked, path: readonly string[]): JsonValue | undefined {
  if (value instanceof BranchValues) return value.items.map((item) => at(item, path) ?? null);
  let v = value;
  for (const key of path) {
    if (v === null || typeof v !== "object") return undefined;
    v = Array.isArray(v) ? v[Number(key)] : v[key];
  }
  return v;
}

/**
 * Resolves a node's inputs: a string that is one expression becomes the value it names (any JSON,
 * null where nothing is there); expressions inside longer text are written into it (strings as they
 * are, other values as JSON).
 */
export function resolveInputs(value: JsonValue, lookup: (root: string) => Looked): JsonValue {
  const lookupValue = (text: string): JsonValue => {
    const ref = parseReference(text);
    return at(lookup(ref.root), ref.path) ?? null;
  };
  const walk = (v: JsonValue): JsonValue => {
    if (typeof v === "string") {
      const whole = WHOLE.exec(v);
      if (whole) return lookupValue(whole[1]!);
      return v.replace(EXPRESSION, (_, text: string) => {
        const resolved = lookupValue(text);
        return typeof resolved === "string" ? resolved : JSON.stringify(resolved);
      });
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, item]) => [k, walk(item)]));
    return v;
  };
  return walk(value);
}
