import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Bus } from "@flotilla/bus";
import { type AlertManager, FlotillaClient, logSink, webhookSink } from "@flotilla/client";
import { createAdaptorServer } from "@hono/node-server";
import { buildApp } from "./app.ts";
import type { GatewayApp } from "./context.ts";
import { LiveFeed } from "./live-feed.ts";
import { GatewayMetrics } from "./metrics.ts";
import { OpenStreams } from "./open-streams.ts";
import { type GatewayOptions, resolveGatewayOptions } from "./options.ts";
import { TokenSigner } from "./scoped-tokens.ts";
import { TokenTable } from "./tokens.ts";

/** How long `close()` lets responses in progress (a long-polled result) finish before cutting their connections. */
const CLOSE_GRACE_MS = 2_000;

export interface Gateway {
  /** The Hono app: `app.request(…)` answers without a server, `app.fetch` mounts it anywhere. */
  readonly app: GatewayApp;
  /** The client every route goes through. */
  readonly client: FlotillaClient;
  /** Listens on `port` and `host`; resolves with the address it took (port 0 picks a free one). */
  start(): Promise<{ host: string; port: number; url: string }>;
  /** Ends open event streams, stops the server and closes the client it made. */
  close(): Promise<void>;
}

/** The gateway: an HTTP + Server-Sent Events API over a FlotillaClient. Nothing listens until `start()`. */
export function createGateway(options: GatewayOptions = {}): Gateway {
  const o = resolveGatewayOptions(options);
  // Checked first: a bad token list must fail before a connection is opened.
  const tokens = new TokenTable(o.tokens);
  const signer = new TokenSigner(o.signingKeys);
  const client =
    o.client ??
    new FlotillaClient({
      ...(o.redis !== undefined && { redis: o.redis }),
      prefix: o.prefix,
      ...(o.signingSecret !== undefined && { signingSecret: o.signingSecret }),
    });
  const streams = new OpenStreams();
  let bus: Promise<Bus> | undefined;
  const busOf = () => {
    bus ??= import("@flotilla/bus").then(({ Bus }) => new Bus({ ...(o.redis !== undefined && { redis: o.redis }), prefix: o.prefix }));
    return bus;
  };
  const feed = new LiveFeed(client);
  const app = buildApp({ client, bus: busOf, options: o, tokens, signer, metrics: new GatewayMetrics(), streams, feed });
  let server: Server | undefined;
  let closing: Promise<void> | undefined;
  let alerts: AlertManager | undefined;

  return {
    app,
    client,
    async start() {
      if (server) throw new Error("the gateway is started already");
      const s = createAdaptorServer({ fetch: app.fetch }) as Server;
      server = s;
      await new Promise<void>((resolve, reject) => {
        s.once("error", reject);
        s.listen(o.port, o.host, () => {
          s.off("error", reject);
          resolve();
        });
      });
      if (o.alerts) {
        const { intervalMs, thresholds, rules, webhooks = [] } = o.alerts;
        alerts = client.fleet.runAlerts({
          ...(intervalMs !== undefined && { intervalMs }),
          ...(thresholds !== undefined && { thresholds }),
          ...(rules !== undefined && { rules }),
          sinks: [logSink(o.logger), ...webhooks.map((url) => webhookSink(url))],
          onError: (err) => o.logger.warn("alert evaluation failed", { err }),
        });
      }
      const { port } = s.address() as AddressInfo;
      const host = o.host.includes(":") ? `[${o.host}]` : o.host;
      return { host: o.host, port, url: `http://${host}:${port}` };
    },
    close() {
      closing ??= (async () => {
        streams.abortAll();
        if (server) {
          const s = server;
          const closed = new Promise<void>((resolve) => s.close(() => resolve()));
          // Keep-alive connections hold close() open until their idle timeout: closed as soon as they are
          // idle (the streams just aborted end their responses in a moment), and cut after a grace period.
          const idle = setInterval(() => s.closeIdleConnections(), 50);
          const cut = setTimeout(() => s.closeAllConnections(), CLOSE_GRACE_MS);
          s.closeIdleConnections();
          await closed;
          clearInterval(idle);
          clearTimeout(cut);
        }
        await alerts?.stop();
        await feed.close();
        if (!o.client) await client.close();
        if (bus) await (await bus).close();
      })();
      return closing;
    },
  };
}
