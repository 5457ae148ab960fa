import { buildApp } from "./app.ts";
import type { GatewayDeps } from "./context.ts";
import { GatewayMetrics } from "./metrics.ts";
import { OpenStreams } from "./open-streams.ts";
import { resolveGatewayOptions } from "./options.ts";
import { OPENAPI_CONFIG } from "./routes/ops.ts";
import { TokenSigner } from "./scoped-tokens.ts";
import { TokenTable } from "./tokens.ts";

/** An OpenAPI 3.0 document, as `GET /openapi.json` answers it. */
export type OpenApiDocument = Record<string, unknown> & { openapi: string; paths: Record<string, unknown> };

/** What the routes would call when a request comes: none comes, so none is made. */
const unused = (what: string) =>
  new Proxy({} as never, {
    get() {
      throw new Error(`openApiDocument(): the ${what} is not for use`);
    },
  });

/**
 * The document `GET /openapi.json` serves, without a server, a client or a connection: what a code
 * generator reads (the dashboard's types come from it: `pnpm --filter @flotilla/dashboard gen:types`).
 */
export function openApiDocument(): OpenApiDocument {
  const deps: GatewayDeps = {
    client: unused("client"),
    bus: () => Promise.reject(new Error("openApiDocument(): no bus")),
    options: resolveGatewayOptions({ alerts: false }),
    tokens: new TokenTable([]),
    signer: new TokenSigner([]),
    metrics: new GatewayMetrics(),
    streams: new OpenStreams(),
    feed: unused("live feed"),
  };
  // Through JSON, as it is served (no undefined members).
  return JSON.parse(JSON.stringify(buildApp(deps).getOpenAPIDocument(OPENAPI_CONFIG))) as OpenApiDocument;
}
