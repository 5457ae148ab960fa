// Scoped tokens for browsers: minted by a configured token that may do what it grants, signed
// (HMAC-SHA256, a key id for rotation), short-lived, good only for what their scopes name.
import { scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { TokenSigner } from "../src/scoped-tokens.ts";
import { jsonHeaders, sseMessages, submitBody, taskPath, useGateway } from "./support.ts";

const ADMIN = "admin-token-0123456789";
const READ_A = "read-a-token-0123456789";
const READ_ALL = "read-all-token-0123456789";
const K1 = { id: "k1", secret: "first-secret-0123456789-0123456789" };
const K2 = { id: "k2", secret: "second-secret-0123456789-0123456789" };
const tokens = [
  { token: ADMIN, role: "admin" as const },
  { token: READ_A, role: "read" as const, queues: ["st-a"] },
  { token: READ_ALL, role: "read" as const },
];

const call = (url: string, path: string, token: string | undefined, init: RequestInit = {}) =>
  fetch(`${url}${path}`, { ...init, headers: { ...jsonHeaders(token), ...(init.headers as Record<string, string>) } });
const mint = (url: string, by: string, body: unknown) => call(url, "/v1/tokens", by, { method: "POST", body: JSON.stringify(body) });
async function minted(url: string, by: string, scopes: string[], ttlSeconds?: number): Promise<string> {
  const res = await mint(url, by, { scopes, ...(ttlSeconds !== undefined && { ttlSeconds }) });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { token: string }).token;
}

describe("scoped tokens", () => {
  const env = useFlotilla("gateway-scoped");
  const gateways = useGateway(env);

  it("read:task:<id> reads that task's record, result and events, as a bearer or ?token=, and nothing else", async () => {
    await env.worker({ queues: ["st-a"] });
    const { url } = await gateways.start({ tokens, signingKeys: [K1] });
    const submit = async (input: string) =>
      (
        (await (await call(url, "/v1/tasks", ADMIN, { method: "POST", body: submitBody(scripted("st"), input, { queue: "st-a" }) })).json()) as {
          taskId: string;
        }
      ).taskId;
    const a = await submit("for the browser");
    const b = await submit("not for it");

    const before = Date.now();
    const res = await mint(url, ADMIN, { scopes: [`read:task:${a}`] });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { token: string; expiresAt: number; scopes: string[] };
    expect(body.scopes).toEqual([`read:task:${a}`]);
    // 15 minutes by default (whole seconds).
    expect(body.expiresAt).toBeGreaterThan(before + 15 * 60_000 - 2000);
    expect(body.expiresAt).toBeLessThanOrEqual(Date.now() + 15 * 60_000);
    const token = body.token;

    expect((await call(url, taskPath(a), token)).status).toBe(200);
    expect((await fetch(`${url}${taskPath(a)}?token=${encodeURIComponent(token)}`)).status).toBe(200);
    const result = await fetch(`${url}${taskPath(a, "/result")}?timeoutMs=10000&token=${encodeURIComponent(token)}`);
    expect(result.status).toBe(200);
    expect(await result.json()).toMatchObject({ result: { text: "Echo: for the browser" } });
    // The event stream, as an EventSource would ask for it (no headers).
    const stream = await fetch(`${url}${taskPath(a, "/events")}?token=${encodeURIComponent(token)}`);
    expect(stream.status).toBe(200);
    const types: string[] = [];
    for await (const m of sseMessages(stream)) if (m.event) types.push(m.event);
    expect(types).toContain("text");
    expect(types.at(-1)).toBe("status");

    // Another task, lists, writes and minting are outside its scope.
    const other = await call(url, taskPath(b), token);
    expect(other.status).toBe(403);
    expect(await other.json()).toMatchObject({ error: { code: "FORBIDDEN", message: expect.stringContaining(`read:task:${b}`) } });
    expect((await call(url, taskPath(b, "/events"), token)).status).toBe(403);
    expect((await call(url, "/v1/tasks?queue=st-a", token)).status).toBe(403);
    expect((await call(url, "/v1/queues", token)).status).toBe(403);
    expect((await call(url, taskPath(a, "/cancel"), token, { method: "POST" })).status).toBe(403);
    expect((await call(url, "/v1/tasks", token, { method: "POST", body: submitBody(scripted("st"), "x", { queue: "st-a" }) })).status).toBe(403);
    expect((await mint(url, token, { scopes: [`read:task:${a}`] })).status).toBe(403);
    // A configured token is never taken from the address.
    const inQuery = await fetch(`${url}${taskPath(a)}?token=${ADMIN}`);
    expect(inQuery.status).toBe(401);
  });

  it("is minted only by a configured token that may do what it grants, for valid scopes and lifetimes", async () => {
    const { url } = await gateways.start({ tokens, signingKeys: [K1] });
    // A read token of queue st-a: its queue's tasks, no other queue, no thread (threads span queues), nothing it cannot do.
    expect((await mint(url, READ_A, { scopes: ["read:task:st-a/x1"] })).status).toBe(201);
    const otherQueue = await mint(url, READ_A, { scopes: ["read:task:st-b/x1"] });
    expect(otherQueue.status).toBe(403);
    expect(await otherQueue.json()).toMatchObject({ error: { code: "FORBIDDEN", message: expect.stringContaining('queue "st-b"') } });
    expect((await mint(url, READ_A, { scopes: ["read:thread:t1"] })).status).toBe(403);
    expect((await mint(url, READ_ALL, { scopes: ["read:thread:t1"] })).status).toBe(201);
    const write = await mint(url, READ_ALL, { scopes: ["write:thread:t1"] });
    expect(write.status).toBe(403);
    expect(await write.json()).toMatchObject({ error: { message: expect.stringContaining("submit role") } });
    expect((await mint(url, ADMIN, { scopes: ["read:thread:t1", "write:thread:t1"], ttlSeconds: 60 })).status).toBe(201);
    // Bad input: a 400 naming the field, nothing minted.
    for (const [body, field] of [
      [{ scopes: ["read:everything"] }, "scopes.0"],
      [{ scopes: ["read:task:no-slash"] }, "scopes.0"],
      [{ scopes: ["write:thread:has space"] }, "scopes.0"],
      [{ scopes: [] }, "scopes"],
      [{ scopes: ["read:thread:t1"], ttlSeconds: 86_401 }, "ttlSeconds"],
      [{ scopes: ["read:thread:t1"], role: "admin" }, "role"],
    ] as const) {
      const bad = await mint(url, ADMIN, body);
      expect(bad.status, JSON.stringify(body)).toBe(400);
      expect(await bad.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", field } });
    }
    // A gateway without signing keys mints nothing.
    const off = await gateways.start({ tokens });
    const refused = await mint(off.url, ADMIN, { scopes: ["read:thread:t1"] });
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ error: { code: "SCOPED_TOKENS_OFF" } });
  });

  it("expired: 401 TOKEN_EXPIRED; tampered or signed by an unknown key: 401", async () => {
    const { url } = await gateways.start({ tokens, signingKeys: [K1] });
    const path = taskPath("st-a/missing");
    const brief = await minted(url, ADMIN, ["read:task:st-a/missing"], 1);
    // Not found while it lives (the scope allows the read; there is no such task)...
    expect((await call(url, path, brief)).status).toBe(404);
    await new Promise((r) => setTimeout(r, 2100));
    // ...and refused once it has expired.
    const expired = await call(url, path, brief);
    expect(expired.status).toBe(401);
    expect(await expired.json()).toMatchObject({ error: { code: "TOKEN_EXPIRED" } });
    expect(expired.headers.get("www-authenticate")).toContain('error="invalid_token"');

    const token = await minted(url, ADMIN, ["read:task:st-a/missing"]);
    const [head, claims, signature] = token.split(".") as [string, string, string];
    // Its scope widened to another task, the signature kept.
    const widened = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(claims, "base64url").toString()), scope: "read:task:st-a/other" })).toString(
      "base64url",
    );
    const tampered = [`${head}.${widened}.${signature}`, `${head}.${claims}.${signature.slice(0, -2)}xx`, `${head}.${claims}.`];
    // Unsigned ("alg": "none").
    tampered.push(`${Buffer.from(JSON.stringify({ alg: "none", typ: "JWT", kid: "k1" })).toString("base64url")}.${claims}.`);
    // Signed by a key this gateway does not have.
    tampered.push(new TokenSigner([{ id: "k1", secret: "a-different-secret-0123456789-0123" }]).mint(["read:task:st-a/missing"], 60).token);
    for (const t of tampered) {
      const res = await call(url, path, t);
      expect(res.status, t).toBe(401);
      expect(await res.json()).toMatchObject({ error: { code: "UNAUTHORIZED" } });
    }
  });

  it("rotates: the new key signs, the old one is accepted until removed", async () => {
    const path = taskPath("st-a/rotated");
    const scopes = ["read:task:st-a/rotated"];
    const before = await gateways.start({ tokens, signingKeys: [K1] });
    const old = await minted(before.url, ADMIN, scopes);
    // Rotation, step 1: the new key first, the old one kept.
    const during = await gateways.start({ tokens, signingKeys: [K2, K1] });
    const fresh = await minted(during.url, ADMIN, scopes);
    expect(JSON.parse(Buffer.from(fresh.split(".")[0]!, "base64url").toString())).toMatchObject({ alg: "HS256", kid: "k2" });
    expect((await call(during.url, path, old)).status).toBe(404);
    expect((await call(during.url, path, fresh)).status).toBe(404);
    // The first gateway, not yet given the new key, refuses what the new key signed.
    expect((await call(before.url, path, fresh)).status).toBe(401);
    // Step 2, once the old key's tokens have expired: it is removed, and what it signed is refused.
    const after = await gateways.start({ tokens, signingKeys: [K2] });
    expect((await call(after.url, path, fresh)).status).toBe(404);
    const refused = await call(after.url, path, old);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toMatchObject({ error: { message: expect.stringContaining('unknown signing key "k1"') } });
  });
});

describe("TokenSigner", () => {
  const signer = new TokenSigner([K1]);

  it("expires a token at exp, not a millisecond later", () => {
    const { token, expiresAt } = signer.mint(["read:thread:t"], 60, 1_000_000);
    expect(expiresAt).toBe(1_060_000);
    expect(signer.verify(token, 1_059_999)).toMatchObject({ scopes: new Set(["read:thread:t"]), keyId: "k1" });
    expect(signer.verify(token, 1_060_000)).toMatchObject({ refused: "expired" });
  });

  it("refuses what is not one of its tokens, and keys that cannot be trusted", () => {
    for (const t of ["", "a.b", "a.b.c.d", "not-base64.x.y", `${Buffer.from("[]").toString("base64url")}.e30.x`]) {
      expect(signer.verify(t)).toMatchObject({ refused: "invalid" });
    }
    expect(() => new TokenSigner([{ id: "k", secret: "short" }])).toThrow(/32 characters/);
    expect(() => new TokenSigner([K1, { ...K2, id: "k1" }])).toThrow(/given twice/);
    expect(() => new TokenSigner([{ ...K1, id: "bad id" }])).toThrow(/letters, digits/);
    expect(new TokenSigner([]).enabled).toBe(false);
  });
});
