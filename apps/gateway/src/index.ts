// @flotilla/gateway: the HTTP + Server-Sent Events API of a Flotilla fleet.
export { buildApp } from "./app.ts";
export type { GatewayApp, GatewayDeps, GatewayEnv } from "./context.ts";
export { ERROR_STATUS, type ErrorBody, errorResponse, GatewayError, GatewayErrorCodes } from "./errors.ts";
export { createGateway, type Gateway } from "./gateway.ts";
export { GatewayMetrics } from "./metrics.ts";
export { type OpenApiDocument, openApiDocument } from "./openapi-document.ts";
export { DEFAULT_BODY_LIMIT_BYTES, type GatewayOptions, type ResolvedGatewayOptions, resolveGatewayOptions } from "./options.ts";
export {
  DEFAULT_TOKEN_TTL_SECONDS,
  MAX_TOKEN_TTL_SECONDS,
  readSigningKeys,
  type ScopedClaims,
  ScopeSchema,
  type SigningKey,
  SigningKeySchema,
  TokenSigner,
} from "./scoped-tokens.ts";
export { type Principal, ROLES, type Role, readTokenRules, type TokenRule, TokenRuleSchema, TokenTable } from "./tokens.ts";
