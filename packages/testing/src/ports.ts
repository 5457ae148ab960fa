import net from "node:net";

/** A port free on loopback now, for a server a test starts. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The environment of a Redis that does not answer: a free loopback port where nothing listens (no cluster). */
export async function downRedisEnv(): Promise<{ REDIS_URL: string; REDIS_CLUSTER_NODES: string }> {
  return { REDIS_URL: `redis://127.0.0.1:${await freePort()}`, REDIS_CLUSTER_NODES: "" };
}

/**
 * A "Redis" that accepts connections and never answers, nor closes its side when the client does:
 * what a hung server or a black-holed network looks like. `env()` points a child at it; `close()`
 * drops its connections and stops it.
 */
export async function startHungRedis(): Promise<{ env(): Record<string, string>; close(): Promise<void> }> {
  const held: net.Socket[] = [];
  const server = net.createServer({ allowHalfOpen: true }, (socket) => held.push(socket));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    env: () => ({ REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_CLUSTER_NODES: "" }),
    close: async () => {
      for (const s of held) s.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
