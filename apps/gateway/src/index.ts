// @flotilla/gateway: the HTTP + Server-Sent Events API of a Flotilla fleet.
export { buildApp } from "./app.ts";
export type { GatewayApp, GatewayDeps, GatewayEnv } from "./context.ts";
export { ERROR_STATUS, type ErrorBody, errorResponse, GatewayError, GatewayErrorCodes } from "./errors.ts";
export { createGateway, type Gateway } from "./gateway.ts";
export { GatewayMetrics } from "./metrics.ts";
export { type OpenApiDocument, openApiDocument } from "./openapi-document.ts";
export { DEFAULT_BODY_LIMIT_BYTES, type GatewayOptions, type ResolvedGatewayOptions, resolveGatewayOptions } from "./options.ts";
export { type Principal, ROLES, type Role, readTokenRules, type TokenRule, TokenRuleSchema, TokenTable } from "./tokens.ts";
