import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { parseInput, QueueNameSchema, ValidationError } from "@flotilla/core";
import { z } from "zod";

/** What a token may do; each role may do everything the ones before it may. */
export const ROLES = ["read", "submit", "admin"] as const;
export type Role = (typeof ROLES)[number];

export const TokenRuleSchema = z
  .object({
    /** The bearer token itself; at least 16 characters, so a guessable one is refused. */
    token: z.string().min(16, "use a token of 16 characters or more"),
    role: z.enum(ROLES),
    /** The queues it may touch, or "*" for all. @default "*" */
    queues: z.union([z.literal("*"), z.array(QueueNameSchema).min(1)]).default("*"),
  })
  .strict();
export type TokenRule = z.input<typeof TokenRuleSchema>;
const TokenRulesSchema = z.array(TokenRuleSchema);

/**
 * Who made a request: its role and the queues it may touch. A scoped token (see scoped-tokens.ts)
 * has no role and no queue: it may do what its `scopes` name, on the routes that accept scopes.
 */
export interface Principal {
  role: Role | "none";
  queues: "*" | ReadonlySet<string>;
  /** A scoped token's scopes (`read:task:<id>`, …); undefined for a configured token. */
  scopes?: ReadonlySet<string> | undefined;
}

/** The principal of a scoped token: nothing but its scopes. */
export const scopedPrincipal = (scopes: ReadonlySet<string>): Principal => ({ role: "none", queues: new Set(), scopes });

/** The caller when no tokens are configured: authentication is off. */
export const ANONYMOUS_ADMIN: Principal = { role: "admin", queues: "*" };

export const roleAtLeast = (have: Role | "none", need: Role): boolean => have !== "none" && ROLES.indexOf(have) >= ROLES.indexOf(need);

export const mayTouchQueue = (p: Principal, queue: string): boolean => p.queues === "*" || p.queues.has(queue);

/** Tokens are looked up by their SHA-256, so a lookup takes no longer for a near miss than a far one. */
const digest = (token: string) => createHash("sha256").update(token).digest("hex");

/** The configured tokens, checked once at startup. */
export class TokenTable {
  private readonly byDigest: Map<string, Principal>;

  constructor(rules: readonly TokenRule[]) {
    const parsed = parseInput(TokenRulesSchema, rules, "gateway tokens");
    this.byDigest = new Map();
    for (const [i, rule] of parsed.entries()) {
      const key = digest(rule.token);
      if (this.byDigest.has(key)) throw ValidationError.of("gateway tokens", `${i}.token`, "is given twice");
      this.byDigest.set(key, { role: rule.role, queues: rule.queues === "*" ? "*" : new Set(rule.queues) });
    }
  }

  /** Whether any token is configured: with none, authentication is off. */
  get enabled(): boolean {
    return this.byDigest.size > 0;
  }

  lookup(token: string): Principal | undefined {
    return this.byDigest.get(digest(token));
  }
}

/**
 * `FLOTILLA_GATEWAY_TOKENS` / `--tokens`: the JSON array itself, or the path of a file holding it
 * (so the secrets can live in a mounted file rather than in the environment).
 */
export function readTokenRules(value: string): TokenRule[] {
  const json = readJsonSetting(value, "tokens", "a JSON array of { token, role, queues }");
  return parseInput(TokenRulesSchema, json, "gateway tokens") as TokenRule[];
}

/**
 * A secret-bearing setting given as JSON or as the path of a file holding it (a mounted secret,
 * so it need not sit in the environment). `field` and `shape` name it in the error.
 */
export function readJsonSetting(value: string, field: string, shape: string): unknown {
  let text = value;
  if (!value.trimStart().startsWith("[") && !value.trimStart().startsWith("{")) {
    try {
      text = readFileSync(value, "utf8");
    } catch (err) {
      throw ValidationError.of("gateway configuration", field, `is neither ${shape} nor a readable file: ${(err as Error).message}`);
    }
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw ValidationError.of("gateway configuration", field, `is not ${shape}: ${(err as Error).message}`);
  }
}
