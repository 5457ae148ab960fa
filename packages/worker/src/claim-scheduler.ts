import type { Broker, Lane } from "@flotilla/broker";
import { type ExponentialBackoff, exponentialDelay, PRIORITIES, type Priority, sleep } from "@flotilla/core";
import type { OwnedRedis } from "@flotilla/core/redis";
import type { StartReply } from "@flotilla/store";
import { BlockedRead } from "./blocked-read.ts";
import type { InFlight } from "./in-flight.ts";
import { laneOrder } from "./lane-order.ts";
import { QUEUE_RECHECK_MS, type QueueReach } from "./queue-reach.ts";
import { queuesInTurn } from "./queue-turns.ts";
import type { Readiness } from "./readiness.ts";
import type { RedisLink } from "./redis-link.ts";
import { type StartDeps, startClaimed } from "./start-claimed.ts";

/** Pause before claiming again after failure number 1, 2, …: 200 ms, doubling, at most 5 s. */
const CLAIM_RETRY_BACKOFF: ExponentialBackoff = { baseMs: 100, maxMs: 5000 };

/**
 * Consumers silent for this many leases and holding nothing are forgotten (see pruneIdleConsumers),
 * looked for every half of it. Forgetting a live consumer is harmless (its next read makes it again),
 * so the margin only spares the group needless churn.
 */
const FORGET_CONSUMERS_AFTER_LEASES = 10;

export interface SchedulerOptions {
  workerId: string;
  queues: readonly string[];
  concurrency: number;
  blockMs: number;
  leaseMs: number;
  promoteIntervalMs: number;
  fairnessEvery: number;
}

export interface SchedulerDeps extends StartDeps {
  /** The connection the claim loop blocks on, and the one that can UNBLOCK it. */
  blocking: OwnedRedis;
  command: OwnedRedis;
  inFlight: InFlight;
  /** Outcomes handed to the settler and not yet written: their runs are over, their slots free. */
  settling: () => number;
  /** Told when claims start failing (the worker is not ready) and when one works again. */
  readiness: Pick<Readiness, "raise" | "clear">;
  /** Whether Redis can be reached: nothing is claimed while it cannot. */
  link: Pick<RedisLink, "up" | "whenUp" | "observe">;
  /**
   * Which queues can be reached (on a cluster, a queue whose master is down cannot): the others are
   * served meanwhile. @default every queue, always
   */
  reach?: Pick<QueueReach, "usable" | "usableOf" | "failed"> | undefined;
}

/** Every queue in reach: a single Redis, or a scheduler made without a QueueReach. */
const EVERY_QUEUE: Pick<QueueReach, "usable" | "usableOf" | "failed"> = { usable: () => true, usableOf: (queues) => [...queues], failed: () => false };

/**
 * Decides what a worker claims and when: free slots (concurrency less the runs going and the slots
 * promised to claims in flight), lane order (priority with the fairness rule), promotion of delayed
 * tasks that fell due, reclaiming entries whose lease lapsed elsewhere, and blocking when there is
 * nothing to do. A busy single-queue worker claims in the same call that settles its last batch
 * (settleClaim / settleStarted, used by the Settler). While claims fail the worker is not ready; a
 * read that meets NOGROUP (Redis lost its data) makes the queues' consumer groups again at once.
 */
export class ClaimScheduler {
  private readonly opts: SchedulerOptions;
  private readonly deps: SchedulerDeps;
  private nextReclaimAt = 0;
  private nextPromoteAt = 0;
  private nextPruneAt = 0;
  private round = 0;
  /** Which of the queues a claim round asks first: each round the next one, so no queue's backlog starves another's. */
  private firstQueue = 0;
  /** Slots promised to claims in flight (made by settle calls), not yet filled. */
  private reserved = 0;
  /**
   * The settle call that just returned claimed nothing: the lanes were empty a moment ago, so the
   * next round blocks at once rather than asking again without blocking (a round trip that would
   * find nothing). What landed in between is returned by the blocking read at once.
   */
  private lanesEmpty = false;
  private wakeUp: (() => void) | undefined;
  private readonly blockedRead: BlockedRead;
  private stopping = false;
  private loop: Promise<void> | undefined;

  private readonly reach: Pick<QueueReach, "usable" | "usableOf" | "failed">;

  constructor(options: SchedulerOptions, deps: SchedulerDeps) {
    this.opts = options;
    this.deps = deps;
    this.reach = deps.reach ?? EVERY_QUEUE;
    this.blockedRead = new BlockedRead(deps.blocking, deps.command);
  }

  /** Claiming, and not stopping. */
  get claiming(): boolean {
    return this.loop !== undefined && !this.stopping;
  }

  async start(): Promise<void> {
    await this.blockedRead.track();
    this.loop = this.run();
  }

  /** Stops claiming; resolves once the loop has ended (a blocked read is unblocked). */
  async stop(): Promise<void> {
    this.stopping = true;
    this.wake();
    await this.blockedRead.end(this.loop);
  }

  /** A slot freed (or the worker is stopping): let the loop look again. */
  wake(): void {
    this.wakeUp?.();
  }

  /**
   * Slots a claim may fill: `concurrency` less the runs still going (a run whose outcome was handed
   * to the settler is done) and the slots promised to claims in flight.
   */
  freeSlots(): number {
    return this.opts.concurrency - (this.deps.inFlight.size - this.deps.settling()) - this.reserved;
  }

  /** Settler hook: how many entries the call settling a batch of `queue` should claim for the slots it frees. */
  settleClaim(queue: string): { count: number; order: readonly Priority[] } | undefined {
    // Only a single-queue worker claims this way, and not when reclaiming is due (it needs slots of its own).
    if (this.stopping || this.opts.queues.length !== 1 || Date.now() >= this.nextReclaimAt || !this.deps.link.up || !this.reach.usable(queue)) {
      return undefined;
    }
    const free = this.freeSlots();
    if (free <= 0) return undefined;
    this.reserved += free;
    return { count: free, order: this.nextOrder() };
  }

  /** Settler hook: the entries a settle call claimed and started (`asked`: the count settleClaim gave). */
  settleStarted(queue: string, replies: readonly StartReply[], asked: number, sentAt: number): void {
    this.reserved -= asked;
    this.lanesEmpty = asked > 0 && replies.length === 0;
    for (const reply of replies) this.deps.dispatch(queue, reply, false, sentAt);
    this.wake();
  }

  private nextOrder(): readonly Priority[] {
    return laneOrder(this.round++, this.opts.fairnessEvery);
  }

  private async run(): Promise<void> {
    let failures = 0;
    // Groups made again since the last claim that worked: the first time, claim again at once; a
    // NOGROUP again before a claim works waits its backoff like any failure.
    let remade = false;
    while (!this.stopping) {
      // Redis out of reach: claim nothing (a claim queued now would be answered only after the leases
      // it gives may have lapsed) until it answers again.
      if (!this.deps.link.up) {
        await Promise.race([this.deps.link.whenUp(), new Promise<void>((resolve) => (this.wakeUp = resolve))]);
        this.wakeUp = undefined;
        continue;
      }
      // Promotion needs no slot: it runs on time however busy the worker is.
      if (Date.now() >= this.nextPromoteAt) {
        try {
          await this.promoteDue();
        } catch (err) {
          this.nextPromoteAt = Date.now() + this.opts.promoteIntervalMs;
          this.deps.log.warn("promotion failed; will retry", { err });
        }
      }
      if (this.freeSlots() <= 0) {
        await this.waitForSlot();
        continue;
      }
      try {
        await this.claimRound();
        failures = 0;
        remade = false;
        this.deps.readiness.clear("claiming");
      } catch (err) {
        if (this.stopping) break;
        const trouble = this.deps.link.observe(err);
        // Redis refused new work at its maxmemory: the link is down ("redis-full") until a probe
        // shows memory below the limit, and the loop waits on it.
        if (trouble === "full") continue;
        failures++;
        this.deps.readiness.raise("claiming", err instanceof Error ? err.message : String(err));
        this.deps.onError(err);
        if (trouble === "nogroup") {
          if ((await this.remakeGroups(err)) && !remade) {
            remade = true;
            continue;
          }
        } else {
          this.deps.log.warn("claim failed; retrying", { err, failures });
        }
        await sleep(exponentialDelay(CLAIM_RETRY_BACKOFF, failures));
      }
    }
  }

  /**
   * A read met NOGROUP: Redis lost its data (restarted without persistence, failed over to an empty
   * replica) and the consumer groups with it. Makes the groups of every queue this worker serves
   * again (one script call per queue, whichever lane failed), puts the queues back in the registry
   * that listing reads, and starts the reclaim scans afresh. Tasks whose data was lost are gone;
   * what is submitted from now on runs. False when Redis refused (the claim loop backs off).
   */
  private async remakeGroups(cause: unknown): Promise<boolean> {
    this.deps.log.warn("a consumer group is missing (Redis lost its data?): making the queues' groups again", { err: cause, queues: this.opts.queues });
    try {
      await Promise.all(
        this.opts.queues.map(async (queue) => {
          await this.deps.broker.ensureGroup(queue, { again: true });
          await this.deps.store.registerQueue(queue);
        }),
      );
      return true;
    } catch (err) {
      this.deps.log.warn("could not make the consumer groups again; retrying", { err });
      return false;
    }
  }

  /**
   * Woken by a free slot, or when promotion or reclaiming falls due (settles then stop claiming, so
   * slots free up for them). Reclaiming already due needs a slot, not a timer: waking for it would
   * spin until one frees.
   */
  private async waitForSlot(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      const now = Date.now();
      const wakeAt = now >= this.nextReclaimAt ? this.nextPromoteAt : Math.min(this.nextPromoteAt, this.nextReclaimAt);
      timer = setTimeout(resolve, Math.max(1, wakeAt - now));
    });
    clearTimeout(timer);
    this.wakeUp = undefined;
    // Outcomes settle in batches: let the rest of this batch free its slots, then claim for all.
    await new Promise((resolve) => setImmediate(resolve));
  }

  private async claimRound(): Promise<void> {
    // Reclaim first, from the same budget of free slots, so reclaimed and new work never together
    // exceed `concurrency`.
    if (Date.now() >= this.nextReclaimAt) await this.reclaimLapsed();
    const free = this.freeSlots();
    if (free <= 0) return;
    // Held while the claim is out, so a settle's claim cannot take the same slots.
    this.reserved += free;
    try {
      // First without blocking: one script per queue claims and starts a whole batch.
      const order = this.nextOrder();
      let started = 0;
      const failed: unknown[] = [];
      const lanesEmpty = this.lanesEmpty;
      this.lanesEmpty = false;
      // Queues out of reach (their cluster master is down) are left alone: the others are served meanwhile.
      const inReach = this.reach.usableOf(queuesInTurn(this.opts.queues, this.firstQueue++));
      if (inReach.length === 0) {
        await this.waitForReach();
        return;
      }
      for (const queue of lanesEmpty ? [] : inReach) {
        if (free - started <= 0) break;
        let replies: StartReply[];
        const sentAt = performance.now();
        try {
          replies = await this.deps.store.claim(queue, this.opts.workerId, free - started, order);
        } catch (err) {
          // NOGROUP (Redis lost its data: the loop makes every queue's groups again), or Redis full
          // (the loop waits for memory): not this queue's trouble alone.
          if (this.deps.link.observe(err) !== "other") throw err;
          // One queue's failure must not stop the others being served; a queue whose node is gone is left alone until it answers.
          this.reach.failed(queue, err);
          failed.push(err);
          this.deps.log.warn("claim from a queue failed; claiming from the others", { queue, err });
          continue;
        }
        started += replies.length;
        for (const reply of replies) this.deps.dispatch(queue, reply, false, sentAt);
      }
      // Every queue failed, none for its node being gone (the next round leaves those alone): the worker's trouble.
      if (failed.length > 0 && failed.length === inReach.length && this.reach.usableOf(inReach).length === inReach.length) throw failed[0];
      for (const err of failed) this.deps.onError(err);
      if (started === 0) {
        const untilDue = Math.max(1, Math.min(this.nextReclaimAt, this.nextPromoteAt) - Date.now());
        const sentAt = performance.now();
        // Its entries' leases count from when the read was sent (Redis delivers them during it): a
        // read blocks at most a third of the lease, so they never start with less than two thirds left.
        const readable = this.reach.usableOf(this.opts.queues);
        if (readable.length === 0) return;
        const entries = await this.deps.broker.block(
          this.deps.blocking.redis,
          this.opts.workerId,
          readable,
          free,
          Math.min(this.opts.blockMs, untilDue, Math.floor(this.opts.leaseMs / 3)),
        );
        await startClaimed(this.deps, this.opts.workerId, entries, { reclaimed: false, leaseFrom: sentAt, free });
      }
    } finally {
      this.reserved -= free;
    }
  }

  /** Every queue is out of reach (their cluster masters are down): waits to be woken, or until they are asked again. */
  private async waitForReach(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wakeUp = resolve;
      timer = setTimeout(resolve, QUEUE_RECHECK_MS);
    });
    clearTimeout(timer);
    this.wakeUp = undefined;
  }

  /** Moves delayed tasks that fell due into their queues; schedules the next look. */
  private async promoteDue(): Promise<void> {
    let next = Date.now() + this.opts.promoteIntervalMs;
    let failed: unknown;
    for (const queue of this.reach.usableOf(this.opts.queues)) {
      try {
        const { nextDueAt } = await this.deps.broker.promote(queue);
        if (nextDueAt !== undefined) next = Math.min(next, nextDueAt);
      } catch (err) {
        // The other queues' due tasks are still promoted; a queue whose node is gone waits until it answers.
        if (!this.reach.failed(queue, err)) failed ??= err;
      }
    }
    this.nextPromoteAt = next;
    if (failed !== undefined) throw failed;
  }

  /**
   * Takes over entries whose lease lapsed with their holder, oldest first in each lane (a task whose
   * worker died has waited longest), lanes in priority order. Each scan records this worker's lease
   * for the queue: others take its entries only once they have been idle that long, whatever their
   * own lease (see Broker.reclaim). A due scan goes before any new claim, from the same free slots.
   */
  private async reclaimLapsed(): Promise<void> {
    // Every half lease, with jitter so a fleet does not scan in step.
    this.nextReclaimAt = Date.now() + Math.floor((this.opts.leaseMs / 2) * (0.75 + Math.random() * 0.5));
    if (Date.now() >= this.nextPruneAt) await this.pruneIdleConsumers();
    for (const priority of PRIORITIES) {
      for (const queue of this.opts.queues) {
        if (!this.reach.usable(queue)) continue;
        const free = this.freeSlots();
        if (free <= 0 || this.stopping) {
          // Slots ran out with lanes still to scan: scan again as soon as one frees.
          this.nextReclaimAt = Date.now();
          return;
        }
        const lane: Lane = { queue, priority };
        let scan: Awaited<ReturnType<Broker["reclaim"]>>;
        const sentAt = performance.now();
        try {
          scan = await this.deps.broker.reclaim(lane, this.opts.workerId, this.opts.leaseMs, free);
        } catch (err) {
          // NOGROUP or Redis full: the loop's to handle, for every lane.
          if (this.deps.link.observe(err) !== "other") throw err;
          // One lane's failure (a key of the wrong type, its node gone) must not stop the others being scanned.
          this.deps.log.warn("reclaim scan of a lane failed; scanning the others", { queue, priority, err });
          if (!this.reach.failed(queue, err)) this.deps.onError(err);
          continue;
        }
        const { entries } = scan;
        // The scan filled every free slot, so more may have lapsed (a killed worker leaves all its
        // runs at once): lapsed runs take the next free slots before new work, not one batch per half lease.
        if (entries.length >= free) this.nextReclaimAt = Date.now();
        // Our own entries, idle because renewals could not reach Redis: those runs are still ours.
        const taken = entries.filter((raw) => !this.deps.inFlight.has(raw, raw.entryId));
        for (const raw of taken) {
          this.deps.log.info("reclaimed a task whose lease lapsed", { queue, priority, entryId: raw.entryId, task: raw.fields?.task });
        }
        await startClaimed(this.deps, this.opts.workerId, taken, { reclaimed: true, leaseFrom: sentAt });
      }
    }
  }

  /**
   * Forgets the consumers of workers that are gone (silent, holding nothing), so a group does not
   * keep one consumer per worker id ever used. Best effort: a failure is logged and tried later.
   */
  private async pruneIdleConsumers(): Promise<void> {
    const forgetAfterMs = this.opts.leaseMs * FORGET_CONSUMERS_AFTER_LEASES;
    this.nextPruneAt = Date.now() + forgetAfterMs / 2;
    try {
      for (const queue of this.opts.queues) {
        const forgotten = await this.deps.broker.pruneConsumers(queue, forgetAfterMs, this.opts.workerId);
        if (forgotten > 0) this.deps.log.info("forgot consumers of workers that are gone", { queue, forgotten });
      }
    } catch (err) {
      this.deps.log.warn("could not forget idle consumers; will retry", { err });
    }
  }
}
