import { isCluster, type OwnedRedis } from "@flotilla/core/redis";

/** How long `end()` tries UNBLOCK before it closes the blocking connection under the read. */
const END_UNBLOCK_MS = 1000;

/**
 * Ends the claim loop's blocked read when the worker stops: knows the blocking connection's client
 * id (learnt again after each reconnect) and sends CLIENT UNBLOCK for it from the command
 * connection, so the read returns at once instead of after `blockMs`.
 */
export class BlockedRead {
  private readonly blocking: OwnedRedis;
  private readonly command: OwnedRedis;
  private clientId: number | undefined;

  constructor(blocking: OwnedRedis, command: OwnedRedis) {
    this.blocking = blocking;
    this.command = command;
  }

  /** Learns the blocking connection's client id now and after each reconnect. */
  async track(): Promise<void> {
    // A cluster's blocked read sits on whichever node serves its slot: `end()` closes it instead.
    if (isCluster(this.blocking.redis)) return;
    await this.learnId();
    this.blocking.redis.on("ready", () => void this.learnId());
  }

  /** Unblocks the read until `done` (the claim loop's end) resolves. */
  async end(done: Promise<void> | undefined): Promise<void> {
    if (isCluster(this.blocking.redis)) {
      // A cluster's read blocks at most CLUSTER_BLOCK_MS (see the broker): wait for it to return.
      await done;
      return;
    }
    // The blocking read may not have reached Redis yet when the first UNBLOCK does: repeat until the loop ends.
    const unblock = () => {
      if (this.clientId !== undefined) void this.command.redis.client("UNBLOCK", this.clientId).catch(() => {});
    };
    unblock();
    const unblocking = setInterval(unblock, 50);
    // After the blocking connection reconnected, ioredis resends the interrupted read before anything
    // else, so its new client id is learnt only when that read returns (up to blockMs later). If
    // UNBLOCK has not ended the loop by then, close the connection under the read: it is the worker's
    // own and is closed next anyway. Entries the read may have claimed stay pending and are reclaimed
    // once their lease lapses, as after any lost connection.
    const closing = setTimeout(() => this.blocking.redis.disconnect(), END_UNBLOCK_MS);
    await done;
    clearInterval(unblocking);
    clearTimeout(closing);
  }

  private async learnId(): Promise<void> {
    try {
      this.clientId = Number(await this.blocking.redis.client("ID"));
    } catch {
      this.clientId = undefined;
    }
  }
}
