import { type Keys, PRIORITIES, type Priority } from "@flotilla/core";

/**
 * A queue's lanes as the scripts number them: 1 high, 2 normal, 3 low. Every script that reads or
 * settles entries takes the three lane keys in this order (KEYS[1..3]) and an entry's lane as its
 * number.
 */
export const LANE_ORDER: readonly Priority[] = PRIORITIES;

export const laneNumber = (priority: Priority | undefined): number => LANE_ORDER.indexOf(priority ?? "normal") + 1;

export const laneOf = (n: unknown): Priority => LANE_ORDER[Number(n) - 1] ?? "normal";

/** A lane order as the scripts take it: `"1,2,3"` for high → normal → low. */
export const laneOrderArg = (order: readonly Priority[]): string => order.map(laneNumber).join(",");

/** The keys of a queue's three lanes, in script order. */
export const laneKeys = (keys: Keys, queue: string): string[] => LANE_ORDER.map((p) => keys.lane(queue, p));

/** The keys of a queue's three delayed sets, in script order. */
export const delayedKeys = (keys: Keys, queue: string): string[] => LANE_ORDER.map((p) => keys.delayed(queue, p));
