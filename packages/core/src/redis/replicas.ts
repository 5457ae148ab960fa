// Waiting for replicas to have a write (Redis WAIT): replication is asynchronous, so a write a
// master acknowledged can be lost when a replica is promoted before it had it.
//
// WAIT blocks the connection it is sent on, and counts the replicas that acknowledged everything
// *that connection* wrote. Sent on a client's shared connection, every other call of the client to
// that node waited behind it, and N durable submits at once were answered after N × the timeout.
// Replication is one ordered stream per master, though: a write made on another connection after a
// submit's write was answered comes later in that stream, so a WAIT that covers it covers the submit
// too. So the submit writes where it always does, and the confirmation is a mark written in the same
// slot plus one WAIT, on a connection of the waiter's own; every submit of that slot whose write was
// answered before the mark shares one round.
import type { Redis } from "ioredis";

/** Connections the waiter opens at most; rounds beyond them wait for one to be free (see `confirm`). */
export const REPLICA_WAITER_CONNECTIONS = 4;
/** How long a mark lives: long enough to be replicated, short enough to leave nothing behind. */
const MARK_TTL_MS = 10_000;

interface Round {
  /** Where the mark is written: a key in the slot of the writes being confirmed. */
  markKey: string;
  replicas: number;
  deadline: number;
  members: Array<{ resolve: (acked: number) => void; reject: (err: unknown) => void }>;
}

/**
 * Confirms that writes reached replicas, without blocking the connection they were made on.
 * `open` makes a connection of the waiter's own (its own socket; a Cluster routes the mark and its
 * WAIT to the mark's slot, which is the writes' slot); `close` ends them.
 */
export class ReplicaWaiter {
  private readonly idle: Redis[] = [];
  private opened = 0;
  /** Rounds not sent yet (formed this tick, or queued for a connection), by mark key: later confirms of that slot join them. */
  private readonly forming = new Map<string, Round>();
  /** Rounds waiting for a free connection, oldest first. */
  private readonly queued: Round[] = [];
  private readonly all = new Set<Redis>();
  private closed = false;

  private readonly open: () => Redis;
  private readonly closeOne: (redis: Redis) => Promise<void>;
  private readonly maxConnections: number;

  constructor(open: () => Redis, closeOne: (redis: Redis) => Promise<void>, maxConnections = REPLICA_WAITER_CONNECTIONS) {
    this.open = open;
    this.closeOne = closeOne;
    this.maxConnections = maxConnections;
  }

  /**
   * How many replicas have every write answered on any connection to `markKey`'s master before this
   * call, waiting until `replicas` of them have or `timeoutMs` has passed, whichever is first. Each
   * call is bounded by its own `timeoutMs` (plus a round trip): a round that waited for a free
   * connection waits only for what is left of its earliest member's time, and a member with time
   * left after a short round goes on in the next one.
   */
  async confirm(markKey: string, replicas: number, timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const acked = await this.join(markKey, replicas, deadline);
      if (acked >= replicas || Date.now() >= deadline - 1) return acked;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const ended = new Error("CLOSED the client was closed while a durable submit waited for its replicas");
    for (const round of new Set([...this.forming.values(), ...this.queued])) for (const m of round.members) m.reject(ended);
    this.forming.clear();
    this.queued.length = 0;
    await Promise.all([...this.all].map((redis) => this.closeOne(redis)));
    this.all.clear();
    this.idle.length = 0;
  }

  private join(markKey: string, replicas: number, deadline: number): Promise<number> {
    if (this.closed) return Promise.reject(new Error("CLOSED the client is closed"));
    return new Promise((resolve, reject) => {
      let round = this.forming.get(markKey);
      if (!round) {
        round = { markKey, replicas, deadline, members: [] };
        this.forming.set(markKey, round);
        const formed = round;
        // Confirms of the same tick share the round; then it goes out (or queues for a connection).
        queueMicrotask(() => this.dispatch(formed));
      }
      round.replicas = Math.max(round.replicas, replicas);
      round.deadline = Math.min(round.deadline, deadline);
      round.members.push({ resolve, reject });
    });
  }

  private dispatch(round: Round): void {
    if (this.closed) return;
    let redis = this.idle.pop();
    if (!redis && this.opened < this.maxConnections) {
      this.opened++;
      redis = this.open();
      this.all.add(redis);
    }
    if (!redis) {
      // Stays joinable while it waits: later confirms of its slot go out with it.
      this.queued.push(round);
      return;
    }
    void this.send(redis, round);
  }

  private async send(redis: Redis, round: Round): Promise<void> {
    if (this.forming.get(round.markKey) === round) this.forming.delete(round.markKey);
    // WAIT 0 would wait for ever: a round whose time is up asks once and returns at once.
    const waitMs = Math.max(1, round.deadline - Date.now());
    try {
      const replies = await redis.pipeline().set(round.markKey, "1", "PX", MARK_TTL_MS).wait(round.replicas, waitMs).exec();
      const [setReply, waitReply] = replies ?? [];
      const err = setReply?.[0] ?? waitReply?.[0];
      if (err) throw err;
      const acked = Number(waitReply?.[1] ?? 0);
      for (const m of round.members) m.resolve(acked);
    } catch (err) {
      for (const m of round.members) m.reject(err);
    }
    if (this.closed) return;
    const next = this.queued.shift();
    if (next) void this.send(redis, next);
    else this.idle.push(redis);
  }
}
