import { ValidationError } from "./errors.ts";

/**
 * Throws a ValidationError when `value` nests objects and arrays more than `max` levels deep (a
 * scalar is 0 levels, `{}` and `[]` are 1, `{ "a": [] }` is 2). JSON.stringify, zod and every
 * recursive walk over a value use the call stack per level: a few thousand levels end in a bare
 * RangeError wherever the value is first touched. This walk keeps its own stack, so it measures any
 * depth safely, and stops at the first level past `max`. The message names no path (it would be as
 * deep as the value). A reference back to an object on the current path (a cycle) is not followed:
 * cycles are reported by whoever checks for them.
 */
export function checkJsonDepth(value: unknown, max: number, what: string): void {
  if (typeof value !== "object" || value === null) return;
  const onPath = new Set<object>();
  // Each object is pushed once to enter it and once more, under it, to leave it (depth -1).
  const stack: Array<[object, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (depth < 0) {
      onPath.delete(node);
      continue;
    }
    if (onPath.has(node)) continue;
    if (depth > max) throw ValidationError.of(what, what, `nested deeper than ${max} levels of objects and arrays (maxJsonDepth)`);
    onPath.add(node);
    stack.push([node, -1]);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
    }
  }
}
