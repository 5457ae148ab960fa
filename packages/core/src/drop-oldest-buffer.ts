/**
 * A bounded queue between a producer that must never wait and one async reader (`for await`): when
 * the reader falls more than `max` items behind, the oldest are dropped, and the reader is told how
 * many by an item `lagged(dropped)` makes, before the next one it gets. `close()` lets the reader
 * finish what is queued, then end.
 */
export class DropOldestBuffer<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly max: number;
  private readonly lagged: (dropped: number) => T;
  private dropped = 0;
  private wake: (() => void) | undefined;
  private closed = false;

  constructor(max: number, lagged: (dropped: number) => T) {
    this.max = max;
    this.lagged = lagged;
  }

  /** Queued items not yet read. */
  get size(): number {
    return this.items.length;
  }

  push(item: T): void {
    if (this.closed) return;
    this.items.push(item);
    if (this.items.length > this.max) {
      this.items.shift();
      this.dropped++;
    }
    this.wake?.();
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      if (this.dropped > 0) {
        const dropped = this.dropped;
        this.dropped = 0;
        yield this.lagged(dropped);
      }
      const next = this.items.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.closed) return;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = undefined;
    }
  }
}
