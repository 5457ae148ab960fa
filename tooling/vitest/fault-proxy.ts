import net from "node:net";

export interface FaultProxy {
  url: string;
  /** Replies dropped so far (each by cutting the connection it came on). */
  readonly drops: number;
  /**
   * Arms a one-shot fault: after a request containing any of `requests` passes through, the first reply
   * containing `reply` on that connection is not delivered: the connection is cut instead, as a
   * network fault would, after Redis has executed the command.
   */
  dropReplyAfter(requests: string[], reply: string): void;
  close(): Promise<void>;
}

/** A TCP proxy in front of Redis, on a free loopback port, that can lose a reply on purpose. */
export async function startFaultProxy(target: { host: string; port: number }): Promise<FaultProxy> {
  let armed: { requests: string[]; reply: string } | undefined;
  let drops = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(target);
    sockets.add(client).add(upstream);
    let watching: string | undefined;
    client.on("data", (d) => {
      if (armed?.requests.some((r) => d.includes(r))) {
        watching = armed!.reply;
        armed = undefined;
      }
      upstream.write(d);
    });
    upstream.on("data", (d) => {
      if (watching && d.includes(watching)) {
        watching = undefined;
        drops++;
        client.destroy();
        upstream.destroy();
        return;
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
    get drops() {
      return drops;
    },
    dropReplyAfter(requests, reply) {
      armed = { requests, reply };
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
