import { type EventSource, type FlotillaEvent, streamEvents } from "@flotilla/events";
import { parseInstance } from "./instances.ts";
import type { GraphRunEvent } from "./run-handle.ts";

/** A node task's event in a run's stream, tagged with the node, its instance and its branch. */
export type NodeStreamEvent = FlotillaEvent & { node: string; instance: string; branch: number[] };

/** What a run's `stream()` yields: its lifecycle events and every node task's events. */
export type GraphStreamEvent = GraphRunEvent | NodeStreamEvent;

const LIFECYCLE: ReadonlySet<string> = new Set(["run-started", "node-created", "node-started", "node-finished", "node-skipped", "run-finished", "run-retried"]);

/** A node task's own event (text, tool call, status…) rather than a lifecycle event of the run. */
export const isNodeEvent = (event: GraphStreamEvent): event is NodeStreamEvent => !LIFECYCLE.has(event.type);

/**
 * Merges a run's lifecycle events with the events of each node task they announce (opened at its
 * node-started: replay of what it published so far, then live, with no gap, as a task's stream is),
 * in arrival order; each node's own events stay in order, and its node-finished comes after them
 * (held back until its task's stream ended). Ends once the lifecycle stream ended and every node
 * stream opened has ended (after its task's terminal event), with the run's terminal event, held
 * back until then so that it comes last.
 */
export async function* mergeRunStream(
  lifecycle: AsyncGenerator<GraphRunEvent>,
  source: () => Promise<EventSource>,
  signal: AbortSignal,
): AsyncGenerator<GraphStreamEvent> {
  const queue: GraphStreamEvent[] = [];
  const opened = new Set<string>();
  let producers = 0;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const drain = async (events: AsyncIterable<GraphStreamEvent>) => {
    producers++;
    try {
      for await (const event of events) {
        queue.push(event);
        notify();
      }
    } catch (err) {
      failure ??= err;
    } finally {
      producers--;
      notify();
    }
  };
  /** node-finished events of instances whose task's stream is still open, by instance. */
  const finishing = new Map<string, GraphRunEvent>();
  const streaming = new Set<string>();
  async function* nodeEvents(taskId: string, instance: string): AsyncGenerator<GraphStreamEvent> {
    const { node, branch } = parseInstance(instance);
    try {
      for await (const event of streamEvents(source(), taskId, { signal })) yield { ...event, node, instance, branch };
    } finally {
      streaming.delete(instance);
    }
    const finished = finishing.get(instance);
    finishing.delete(instance);
    if (finished) yield finished;
  }
  let held: GraphRunEvent | undefined;
  async function* announced(): AsyncGenerator<GraphStreamEvent> {
    for await (const event of lifecycle) {
      // A run retried after it ended goes on: its earlier end is no longer the last word.
      if (held) yield held;
      held = undefined;
      if (event.type === "run-finished") {
        held = event;
        continue;
      }
      if (event.type === "node-started" && event.taskId !== undefined && event.instance !== undefined && !opened.has(event.taskId)) {
        opened.add(event.taskId);
        streaming.add(event.instance);
        void drain(nodeEvents(event.taskId, event.instance));
      }
      if (event.type === "node-finished" && event.instance !== undefined && streaming.has(event.instance)) {
        finishing.set(event.instance, event);
        continue;
      }
      yield event;
    }
  }
  // A reader that stops early stops the lifecycle read too (within one blocking read).
  signal.addEventListener("abort", () => void lifecycle.return(undefined), { once: true });
  void drain(announced());
  for (;;) {
    const next = queue.shift();
    if (next) {
      yield next;
      continue;
    }
    if (failure) throw failure;
    if (producers === 0) {
      if (held) yield held;
      return;
    }
    await new Promise<void>((resolve) => {
      wake = resolve;
    });
  }
}
