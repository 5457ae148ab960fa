// Clients and workers over TLS (`rediss://`) to a redis-server this file starts on a TLS-only port,
// with a CA and certificates openssl makes at start: a run end to end with the CA given, a clear
// refusal without it, and a server that requires client certificates.
import { ConnectionError, ErrorCodes } from "@flotilla/core";
import type { RedisConnection } from "@flotilla/core/redis";
import { collect, echo, startRedisTlsServer, type TestRedisTlsServer, testPrefix } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FlotillaClient, type FlotillaEvent } from "../src/index.ts";

const prefix = testPrefix("tls");

/** A client and a worker on `redis` run one task: its events stream and its result comes back. */
async function runOne(redis: RedisConnection, input: string): Promise<void> {
  const worker = new Worker({ redis, prefix, queues: ["tls"], blockMs: 500, heartbeatTtlMs: 3000 });
  const client = new FlotillaClient({ redis, prefix });
  try {
    await worker.start();
    const handle = await client.submit(echo(), input, { queue: "tls", detailed: true });
    const events: FlotillaEvent[] = await collect(handle.stream());
    expect(events.at(-1)).toMatchObject({ type: "status", status: "completed" });
    expect(await handle.result()).toMatchObject({ text: `Echo: ${input}` });
  } finally {
    await client.close();
    await worker.stop({ drainTimeoutMs: 500 });
  }
}

/** What a client and a worker that cannot connect fail with. */
async function refusals(redis: RedisConnection): Promise<[client: unknown, worker: unknown]> {
  const client = new FlotillaClient({ redis, prefix, connectTimeoutMs: 2000 });
  const worker = new Worker({ redis, prefix, queues: ["tls"], connectTimeoutMs: 2000 });
  try {
    return [await client.submit(echo(), "x", { queue: "tls" }).catch((e: unknown) => e), await worker.start().catch((e: unknown) => e)];
  } finally {
    await client.close();
    await worker.stop({ drainTimeoutMs: 0 }).catch(() => {});
  }
}

describe("over TLS, client certificates optional", () => {
  let server: TestRedisTlsServer;
  beforeAll(async () => {
    server = await startRedisTlsServer();
  });
  afterAll(() => server?.stop());

  it("a client and a worker given the CA run a task end to end over rediss://", async () => {
    await runOne({ url: server.url, tls: server.tls() }, "over tls");
  });

  it("the same with plain options ({ host, port, tls }) and with a client certificate", async () => {
    await runOne({ host: "127.0.0.1", port: server.port, tls: server.tls({ clientCertificate: true }) }, "with a certificate");
  });

  it("without the CA the connection is refused: a ConnectionError that names the untrusted certificate and tls.ca", async () => {
    for (const err of await refusals(server.url)) {
      expect(err).toBeInstanceOf(ConnectionError);
      expect(err).toMatchObject({ code: ErrorCodes.REDIS_UNAVAILABLE });
      expect((err as Error).message).toMatch(
        /TLS: the server's certificate is not trusted \(self-signed certificate in certificate chain\): give the CA.*\(tls\.ca\)/,
      );
    }
  });
});

describe("over TLS, client certificates required (tls-auth-clients yes)", () => {
  let server: TestRedisTlsServer;
  beforeAll(async () => {
    server = await startRedisTlsServer({ authClients: "yes" });
  });
  afterAll(() => server?.stop());

  it("a client and a worker presenting a certificate signed by the CA run a task end to end", async () => {
    await runOne({ url: server.url, tls: server.tls({ clientCertificate: true }) }, "mutual tls");
  });

  it("without a client certificate the connection is refused, saying a certificate may be wanted", async () => {
    for (const err of await refusals({ url: server.url, tls: server.tls() })) {
      expect(err).toBeInstanceOf(ConnectionError);
      expect((err as Error).message).toMatch(/requires client certificates.*give tls\.cert and tls\.key/);
    }
  });
});
