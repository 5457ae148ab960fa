import type { FinishOutcome, SettleInput, TaskStore } from "@flotilla/store";

interface Waiting {
  input: SettleInput;
  resolve: (outcome: FinishOutcome) => void;
  reject: (err: unknown) => void;
}

/**
 * Gathers the outcomes a worker records in the same tick and writes them per queue in one script
 * call each: the record updates, entry acknowledgements and status events of a whole batch cost
 * one round trip. Each caller still gets its own outcome back.
 */
export class Settler {
  private readonly store: TaskStore;
  private readonly consumer: string;
  private readonly maxBatch: number;
  private buffers = new Map<string, Waiting[]>();
  private scheduled = false;

  constructor(store: TaskStore, consumer: string, maxBatch = 200) {
    this.store = store;
    this.consumer = consumer;
    this.maxBatch = maxBatch;
  }

  settle(queue: string, input: SettleInput): Promise<FinishOutcome> {
    return new Promise((resolve, reject) => {
      const buffer = this.buffers.get(queue) ?? [];
      buffer.push({ input, resolve, reject });
      this.buffers.set(queue, buffer);
      if (buffer.length >= this.maxBatch) {
        this.buffers.delete(queue);
        void this.send(queue, buffer);
      } else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const buffers = this.buffers;
    this.buffers = new Map();
    for (const [queue, batch] of buffers) void this.send(queue, batch);
  }

  private async send(queue: string, batch: Waiting[]): Promise<void> {
    try {
      const outcomes = await this.store.settle(
        queue,
        this.consumer,
        batch.map((w) => w.input),
      );
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(outcomes[i]!);
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
