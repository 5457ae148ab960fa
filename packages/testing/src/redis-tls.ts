import { readFileSync } from "node:fs";
import type { ConnectionOptions } from "node:tls";
import { freePort } from "./ports.ts";
import { cleanUpOnExit, type Leftovers, LOOPBACK, launchRedis } from "./redis-process.ts";
import { makeTlsCertificates, type TlsCertificates } from "./tls-certificates.ts";

export interface RedisTlsServerOptions {
  /**
   * `tls-auth-clients`: whether a client must present a certificate signed by the CA (`"yes"`), may
   * (`"optional"`) or is never asked for one (`"no"`). @default "optional"
   */
  authClients?: "yes" | "no" | "optional";
  /** The redis-server executable. @default "redis-server" (from PATH) */
  binary?: string;
  /** The openssl executable that makes the certificates. @default "openssl" (from PATH) */
  openssl?: string;
  /** More `--name value` arguments for redis-server. */
  args?: string[];
  /** How long to wait for it to answer over TLS. @default 5_000 */
  startTimeoutMs?: number;
}

export interface TestRedisTlsServer {
  /** rediss://127.0.0.1:PORT */
  url: string;
  /** The TLS port (the server has no plain-text port). */
  port: number;
  /** The PEM files: the CA, the server's and a client's certificate and key. */
  certificates: TlsCertificates;
  /**
   * ioredis `tls` options that trust the test CA; with `{ clientCertificate: true }` they present the
   * client certificate too.
   */
  tls(options?: { clientCertificate?: boolean }): ConnectionOptions;
  /** Stops the server and removes its directory (certificates and data). Idempotent. */
  stop(): Promise<void>;
}

/**
 * A private redis-server that speaks TLS only (`--port 0 --tls-port <free>`) on loopback, with a
 * CA, server and client certificates made by openssl at start: for tests of `rediss://`
 * connections, CA checks and client certificates.
 */
export async function startRedisTlsServer(options: RedisTlsServerOptions = {}): Promise<TestRedisTlsServer> {
  const certificates = await makeTlsCertificates(options.openssl);
  // The server keeps its data beside the certificates: one directory to remove.
  const dir = certificates.dir;
  const entry: Leftovers = { processes: [], dir };
  const cleanup = cleanUpOnExit(entry);
  const trust: ConnectionOptions = { ca: readFileSync(certificates.ca) };
  const withClientCert: ConnectionOptions = { ...trust, cert: readFileSync(certificates.clientCert), key: readFileSync(certificates.clientKey) };
  const remove = () => {
    certificates.remove();
    cleanup.forget();
  };
  try {
    const port = await freePort();
    // launchRedis stops the process itself when it fails.
    const running = await launchRedis({
      binary: options.binary ?? "redis-server",
      port,
      cwd: dir,
      deadline: Date.now() + (options.startTimeoutMs ?? 5000),
      // The probe presents the client certificate: it must get through whatever tls-auth-clients says.
      ask: { tls: withClientCert },
      args: [
        ...["--port", "0", "--tls-port", String(port), "--bind", LOOPBACK, "--dir", dir, "--save", "", "--appendonly", "no"],
        ...["--tls-cert-file", certificates.serverCert, "--tls-key-file", certificates.serverKey, "--tls-ca-cert-file", certificates.ca],
        ...["--tls-auth-clients", options.authClients ?? "optional"],
        ...(options.args ?? []),
      ],
    });
    entry.processes.push(running);
    let stopping: Promise<void> | undefined;
    return {
      url: `rediss://${LOOPBACK}:${port}`,
      port,
      certificates,
      tls: ({ clientCertificate = false } = {}) => ({ ...(clientCertificate ? withClientCert : trust) }),
      stop() {
        stopping ??= running.halt().then(remove);
        return stopping;
      },
    };
  } catch (err) {
    remove();
    throw err;
  }
}
