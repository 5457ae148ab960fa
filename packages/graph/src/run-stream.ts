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
 * node-started: replay of what it published so far, then live, with no gap, as a task's stream is).
 * Causal order: the lifecycle is passed on in its own order, and at a node's node-finished it waits
 * until that node's task stream has ended (after its task's terminal event, which the task reached
 * before its end was handed to the run) — so a node's own events come before its node-finished, and
 * its node-finished before anything the lifecycle says after it: the node-created and node-started
 * of the nodes its end enabled, and so every event of theirs (their streams open at their
 * node-started). Streams of nodes running side by side interleave as they arrive. Ends once the
 * lifecycle stream ended and every node stream opened has ended, with the run's terminal event,
 * held back until then so that it comes last.
 */
export async function* mergeRunStream(
  lifecycle: AsyncGenerator<GraphRunEvent>,
  source: () => Promise<EventSource>,
  signal: AbortSignal,
): AsyncGenerator<GraphStreamEvent> {
  const queue: GraphStreamEvent[] = [];
  let producers = 0;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const push = (event: GraphStreamEvent) => {
    queue.push(event);
    notify();
  };
  /** Runs one producer; the reader ends once none is left. Its failure ends the reader (after what came before it). */
  const produce = (work: Promise<void>): Promise<void> => {
    producers++;
    return work
      .catch((err: unknown) => {
        failure ??= err;
      })
      .finally(() => {
        producers--;
        notify();
      });
  };
  const opened = new Set<string>();
  /** When the stream of each instance's latest task (opened at its node-started) has ended. */
  const streams = new Map<string, Promise<void>>();
  const nodeStream = async (taskId: string, instance: string) => {
    const { node, branch } = parseInstance(instance);
    for await (const event of streamEvents(source(), taskId, { signal })) push({ ...event, node, instance, branch });
  };
  let held: GraphRunEvent | undefined;
  const announce = async () => {
    for await (const event of lifecycle) {
      // A run retried after it ended goes on: its earlier end is no longer the last word.
      if (held) push(held);
      held = undefined;
      if (event.type === "run-finished") {
        held = event;
        continue;
      }
      if (event.type === "node-finished" && event.instance !== undefined) {
        const ended = streams.get(event.instance);
        streams.delete(event.instance);
        await ended;
      }
      push(event);
      if (event.type === "node-started" && event.taskId !== undefined && event.instance !== undefined && !opened.has(event.taskId)) {
        opened.add(event.taskId);
        // Opened after its node-started is queued: none of its events can come before it.
        streams.set(event.instance, produce(nodeStream(event.taskId, event.instance)));
      }
    }
  };
  // A reader that stops early stops the lifecycle read too (within one blocking read).
  signal.addEventListener("abort", () => void lifecycle.return(undefined), { once: true });
  void produce(announce());
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
