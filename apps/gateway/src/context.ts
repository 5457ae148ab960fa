import type { Bus } from "@flotilla/bus";
import type { FlotillaClient } from "@flotilla/client";
import type { OpenAPIHono } from "@hono/zod-openapi";
import type { LiveFeed } from "./live-feed.ts";
import type { GatewayMetrics } from "./metrics.ts";
import type { OpenStreams } from "./open-streams.ts";
import type { ResolvedGatewayOptions } from "./options.ts";
import type { TokenSigner } from "./scoped-tokens.ts";
import type { Principal, TokenTable } from "./tokens.ts";

/** Hono's per-request variables: who is calling, set by the authentication middleware. */
export interface GatewayEnv {
  Variables: { principal: Principal };
}

export type GatewayApp = OpenAPIHono<GatewayEnv>;

/** What the routes share: the client every call goes through, the settings, the metrics. */
export interface GatewayDeps {
  client: FlotillaClient;
  /** The event bus on the same Redis and prefix, made on first use. */
  bus: () => Promise<Bus>;
  options: ResolvedGatewayOptions;
  tokens: TokenTable;
  /** Mints and checks scoped tokens (POST /v1/tokens). */
  signer: TokenSigner;
  metrics: GatewayMetrics;
  streams: OpenStreams;
  /** The fleet's lifecycle, shared by every `GET /v1/events` stream. */
  feed: LiveFeed;
}
