import net from "node:net";
import { ValidationError } from "@flotilla/core";

export interface FaultProxy {
  /** redis://127.0.0.1:PORT: give it to the worker or client under test instead of Redis's own URL. */
  url: string;
  port: number;
  /** Replies dropped so far (each by cutting the connection it came on). */
  readonly drops: number;
  /**
   * Arms a one-shot fault: after a request containing any of `requests` passes through, the first
   * reply containing `reply` on that connection is not delivered: the connection is cut instead, as
   * a network fault would, after Redis has executed the command. Exactly one reply is dropped per
   * call; arming again replaces a fault that has not fired yet.
   */
  dropReplyAfter(requests: string[], reply: string): void;
  /**
   * Cuts the network without closing anything, as a partition does: from now on every byte either
   * way is held (connections stay open, new ones are accepted and held too) until `heal()`, which
   * delivers what was held, in order, as TCP's retransmissions do once a short partition ends.
   */
  partition(): void;
  heal(): void;
  close(): Promise<void>;
}

/**
 * Whether `needle` occurs in `chunk`, or straddles the end of the previous chunk (`tail`) and the
 * start of this one: a command or reply may arrive split over several TCP reads.
 */
function seen(tail: Buffer, chunk: Buffer, needle: string): boolean {
  if (chunk.includes(needle)) return true;
  return tail.length > 0 && Buffer.concat([tail, chunk.subarray(0, needle.length - 1)]).includes(needle);
}

/** What to keep of a stream's last bytes to find a needle of length `max` split across reads. */
const tailOf = (tail: Buffer, chunk: Buffer, max: number) => {
  const joined = tail.length ? Buffer.concat([tail, chunk]) : chunk;
  return Buffer.from(joined.subarray(Math.max(0, joined.length - (max - 1))));
};

/** A TCP proxy in front of Redis, on a free loopback port, that can lose a reply on purpose. */
export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let armed: { requests: string[]; reply: string } | undefined;
  let drops = 0;
  const sockets = new Set<net.Socket>();
  /** While partitioned: each held write, to be done on heal. */
  let held: Array<() => void> | undefined;
  /** Writes now, or on heal while partitioned. */
  const deliver = (write: () => void) => (held ? held.push(write) : write());
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let watching: string | undefined;
    let requestTail = Buffer.alloc(0);
    let replyTail = Buffer.alloc(0);
    client.on("data", (d: Buffer) => {
      const fault = armed;
      if (!fault) requestTail = Buffer.alloc(0);
      else if (fault.requests.some((r) => seen(requestTail, d, r))) {
        watching = fault.reply;
        armed = undefined;
        replyTail = Buffer.alloc(0);
      } else {
        requestTail = tailOf(requestTail, d, Math.max(...fault.requests.map((r) => r.length)));
      }
      deliver(() => upstream.write(d));
    });
    upstream.on("data", (d: Buffer) => {
      if (held) {
        // Replayed through this handler on heal, so an armed reply fault still sees it.
        held.push(() => upstream.emit("data", d));
        return;
      }
      if (watching) {
        if (seen(replyTail, d, watching)) {
          watching = undefined;
          drops++;
          client.destroy();
          upstream.destroy();
          return;
        }
        replyTail = tailOf(replyTail, d, watching.length);
      }
      client.write(d);
    });
    const close = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    for (const s of [client, upstream]) {
      s.on("close", close);
      s.on("error", close);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    get drops() {
      return drops;
    },
    dropReplyAfter(requests, reply) {
      if (requests.length === 0 || requests.some((r) => !r) || !reply)
        throw ValidationError.of("dropReplyAfter", "requests", "give non-empty requests and reply");
      armed = { requests, reply };
    },
    partition() {
      held ??= [];
    },
    heal() {
      const writes = held ?? [];
      held = undefined;
      for (const write of writes) write();
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
