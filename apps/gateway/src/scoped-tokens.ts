import { createHmac, timingSafeEqual } from "node:crypto";
import { parseInput, TaskIdSchema, ValidationError } from "@flotilla/core";
import { z } from "@hono/zod-openapi";
import { readJsonSetting } from "./tokens.ts";

/**
 * Scoped tokens: short-lived bearer tokens the gateway mints for a browser (`POST /v1/tokens`), each
 * good for a few named things only. A token is a JWT (HS256) whose header names the signing key
 * (`kid`) and whose claims are `scope` (the scopes, space-separated, as OAuth writes them), `iat`
 * and `exp` (seconds). The gateway alone checks them: nothing is stored per token, so any number of
 * gateways sharing the keys accept each other's tokens, and a token cannot be revoked before it
 * expires (keep them short).
 */

/** A thread's id: letters, digits and `_ . : -`, at most 128 characters. */
export const ThreadIdPattern = /^[A-Za-z0-9_.:-]{1,128}$/;

/** What a scoped token may do: read one task (record, result, events), or read or write one thread. */
export const ScopeSchema = z.string().refine(
  (scope) => {
    const [verb, kind, ...rest] = scope.split(":");
    const id = rest.join(":");
    if (verb === "read" && kind === "task") return TaskIdSchema.safeParse(id).success;
    if ((verb === "read" || verb === "write") && kind === "thread") return ThreadIdPattern.test(id);
    return false;
  },
  { message: "a scope is read:task:<queue>/<name>, read:thread:<id> or write:thread:<id>" },
);

export const SigningKeySchema = z
  .object({
    /** Named in each token's header, so a token says which key signed it. */
    id: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, "letters, digits and _ . - only (1 to 64)"),
    /** The HMAC-SHA256 secret; at least 32 characters. */
    secret: z.string().min(32, "use a secret of 32 characters or more"),
  })
  .strict();
export type SigningKey = z.input<typeof SigningKeySchema>;
const SigningKeysSchema = z.array(SigningKeySchema);

/** @default 15 minutes */
export const DEFAULT_TOKEN_TTL_SECONDS = 15 * 60;
/** The longest a scoped token may live: a day. */
export const MAX_TOKEN_TTL_SECONDS = 24 * 60 * 60;

/** A scoped token's claims, checked. */
export interface ScopedClaims {
  scopes: ReadonlySet<string>;
  /** When it expires (ms since the epoch). */
  expiresAt: number;
  keyId: string;
}

/** Why a presented scoped token is refused: `expired` is a 401 TOKEN_EXPIRED, `invalid` a plain 401. */
export type TokenRefusal = { refused: "expired" | "invalid"; why: string };

const b64 = (data: string | Buffer) => Buffer.from(data).toString("base64url");
const HEADER_FIELDS = new Set(["alg", "typ", "kid"]);

/**
 * The gateway's signing keys: the first signs what is minted, every one is accepted. To rotate,
 * put the new key first and keep the old one until its last token has expired (at most a day),
 * then remove it: its tokens are refused from then on.
 */
export class TokenSigner {
  private readonly keys: ReadonlyMap<string, Buffer>;
  private readonly signingKey: { id: string; secret: Buffer } | undefined;

  constructor(keys: readonly SigningKey[]) {
    const parsed = parseInput(SigningKeysSchema, keys, "gateway signing keys");
    const byId = new Map<string, Buffer>();
    for (const [i, key] of parsed.entries()) {
      if (byId.has(key.id)) throw ValidationError.of("gateway signing keys", `${i}.id`, `key id "${key.id}" is given twice`);
      byId.set(key.id, Buffer.from(key.secret));
    }
    this.keys = byId;
    const first = parsed[0];
    this.signingKey = first === undefined ? undefined : { id: first.id, secret: Buffer.from(first.secret) };
  }

  /** Whether keys are configured: without them no token is minted or accepted. */
  get enabled(): boolean {
    return this.signingKey !== undefined;
  }

  /** A token for `scopes`, living `ttlSeconds` from `now` (ms). */
  mint(scopes: readonly string[], ttlSeconds: number, now: number = Date.now()): { token: string; expiresAt: number } {
    const key = this.signingKey;
    if (!key) throw new Error("no signing key configured");
    const iat = Math.floor(now / 1000);
    const exp = iat + ttlSeconds;
    const signed = `${b64(JSON.stringify({ alg: "HS256", typ: "JWT", kid: key.id }))}.${b64(JSON.stringify({ scope: scopes.join(" "), iat, exp }))}`;
    return { token: `${signed}.${sign(key.secret, signed)}`, expiresAt: exp * 1000 };
  }

  /**
   * The claims of `token`, or why it is refused: not three parts, a header other than HS256 with a
   * known key, a signature that does not match (tampered, or signed by a key removed since), or
   * claims that are not a scope list and times; expired once `exp` has passed.
   */
  verify(token: string, now: number = Date.now()): ScopedClaims | TokenRefusal {
    const parts = token.split(".");
    if (parts.length !== 3) return { refused: "invalid", why: "not a scoped token" };
    const [head, body, signature] = parts as [string, string, string];
    const header = decodeJson(head);
    if (header?.alg !== "HS256" || typeof header.kid !== "string" || Object.keys(header).some((k) => !HEADER_FIELDS.has(k))) {
      return { refused: "invalid", why: "not a scoped token of this gateway" };
    }
    const secret = this.keys.get(header.kid);
    if (!secret) return { refused: "invalid", why: `unknown signing key "${header.kid}"` };
    const expected = Buffer.from(sign(secret, `${head}.${body}`));
    const given = Buffer.from(signature);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { refused: "invalid", why: "bad signature" };
    const claims = decodeJson(body);
    if (!claims || typeof claims.scope !== "string" || !Number.isInteger(claims.exp)) return { refused: "invalid", why: "malformed claims" };
    const expiresAt = (claims.exp as number) * 1000;
    if (now >= expiresAt) return { refused: "expired", why: `expired at ${new Date(expiresAt).toISOString()}` };
    return { scopes: new Set(claims.scope.split(" ").filter(Boolean)), expiresAt, keyId: header.kid };
  }
}

function sign(secret: Buffer, data: string): string {
  return createHmac("sha256", secret).update(data).digest("base64url");
}

function decodeJson(part: string): Record<string, unknown> | undefined {
  try {
    const value: unknown = JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
    return value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * `FLOTILLA_GATEWAY_SIGNING_KEYS` / `--signing-keys`: the JSON array itself, or the path of a file
 * holding it (a mounted secret).
 */
export function readSigningKeys(value: string): SigningKey[] {
  const json = readJsonSetting(value, "signingKeys", "a JSON array of { id, secret }");
  return parseInput(SigningKeysSchema, json, "gateway signing keys") as SigningKey[];
}
