import { ValidationError } from "@flotilla/core";

/**
 * Throws a ValidationError when `value` holds a circular reference, naming the property that closes
 * the loop. JSON.stringify would otherwise throw a bare TypeError mid-submit; checked before any
 * parsing so a cycle never reaches zod or Redis. Shared (non-circular) references are fine: JSON
 * writes them twice.
 */
export function assertAcyclic(value: unknown, what: string): void {
  const keys: string[] = [];
  const depthOf = new Map<object, number>(); // the objects on the current path, with their depth
  const targetDepth = walk(value, keys, depthOf);
  if (targetDepth === undefined) return;
  const at = [what, ...keys].join(".");
  const target = [what, ...keys.slice(0, targetDepth)].join(".");
  throw ValidationError.of(what, keys.join("."), `circular reference: ${at} refers back to ${target}; only JSON values can be sent`);
}

/**
 * Depth-first over objects and arrays. Returns the depth of the ancestor a reference points back to,
 * leaving `keys` as the path to that reference; undefined when there is no cycle.
 */
function walk(value: unknown, keys: string[], depthOf: Map<object, number>): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const ancestor = depthOf.get(value);
  if (ancestor !== undefined) return ancestor;
  depthOf.set(value, keys.length);
  for (const [key, child] of Object.entries(value)) {
    keys.push(key);
    const found = walk(child, keys, depthOf);
    if (found !== undefined) return found;
    keys.pop();
  }
  depthOf.delete(value);
  return undefined;
}
