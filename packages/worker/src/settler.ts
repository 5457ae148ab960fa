import type { Priority } from "@flotilla/core";
import type { FinishOutcome, SettleInput, StartReply, TaskStore } from "@flotilla/store";

interface Waiting {
  input: SettleInput;
  resolve: (outcome: FinishOutcome) => void;
  reject: (err: unknown) => void;
}

export interface SettlerHooks {
  /**
   * Asked as a batch of outcomes of `queue` is sent: how many new entries the same call should
   * claim for the slots it frees, or undefined for none.
   */
  claim?(queue: string): { count: number; order: readonly Priority[] } | undefined;
  /**
   * Gets the tasks a batch claimed and started (`asked`: the count `claim` returned, 0 if none;
   * `sentAt`: when the call was sent, monotonic ms: their leases run from then).
   */
  started?(queue: string, replies: StartReply[], asked: number, sentAt: number): void;
}

/**
 * Gathers the outcomes a worker records in the same tick and writes them per queue in one script
 * call each: the record updates, entry acknowledgements and status events of a whole batch, and
 * the claim of the next batch, cost one round trip. Each caller still gets its own outcome back.
 */
export class Settler {
  private readonly store: TaskStore;
  private readonly consumer: string;
  private readonly hooks: SettlerHooks;
  private readonly maxBatch: number;
  private buffers = new Map<string, Waiting[]>();
  private scheduled = false;
  private pending = 0;

  /** @param maxBatch outcomes per call at most; smaller batches let one batch run while the last settles */
  constructor(store: TaskStore, consumer: string, hooks: SettlerHooks = {}, maxBatch = 200) {
    this.store = store;
    this.consumer = consumer;
    this.hooks = hooks;
    this.maxBatch = maxBatch;
  }

  /** Outcomes handed in and not yet written. */
  get settling(): number {
    return this.pending;
  }

  settle(queue: string, input: SettleInput): Promise<FinishOutcome> {
    this.pending++;
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
    const claim = this.hooks.claim?.(queue);
    let started: StartReply[] = [];
    const sentAt = performance.now();
    try {
      const reply = await this.store.settle(
        queue,
        this.consumer,
        batch.map((w) => w.input),
        claim ? { claim: claim.count, order: claim.order } : {},
      );
      this.pending -= batch.length;
      for (let i = 0; i < batch.length; i++) batch[i]!.resolve(reply.outcomes[i]!);
      started = reply.started;
    } catch (err) {
      this.pending -= batch.length;
      for (const w of batch) w.reject(err);
    }
    this.hooks.started?.(queue, started, claim?.count ?? 0, sentAt);
  }
}
