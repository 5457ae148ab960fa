// The process's configuration: flags over environment over defaults, tokens as JSON or a file, and no
// unauthenticated gateway on a non-loopback address.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../src/config.ts";
import { resolveGatewayOptions } from "../src/options.ts";

const TOKENS = [{ token: "a-long-enough-token-1", role: "admin", queues: "*" }];

describe("gateway configuration", () => {
  const dir = mkdtempSync(join(tmpdir(), "gateway-config-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("defaults to port 8080 on loopback, and the options' defaults fill the rest", () => {
    const config = loadConfig([], {});
    expect(config).toMatchObject({ port: 8080, host: "127.0.0.1", prefix: "flotilla", tokens: [] });
    expect(resolveGatewayOptions(config === "help" ? {} : config)).toMatchObject({ bodyLimitBytes: 1_114_112, heartbeatMs: 15_000, corsOrigins: [] });
  });

  it("in code, takes its prefix as every entry point does: the option, a given client's, FLOTILLA_PREFIX, then the default", () => {
    vi.stubEnv("FLOTILLA_PREFIX", "from-env");
    try {
      expect(resolveGatewayOptions({}).prefix).toBe("from-env");
      expect(resolveGatewayOptions({ prefix: "given" }).prefix).toBe("given");
      // A client made elsewhere: the gateway's bus goes on the client's keys.
      expect(resolveGatewayOptions({ client: { keys: { prefix: "the-clients" } } as never }).prefix).toBe("the-clients");
      vi.stubEnv("FLOTILLA_PREFIX", "bad prefix");
      expect(() => resolveGatewayOptions({})).toThrow(/FLOTILLA_PREFIX/);
      vi.stubEnv("FLOTILLA_PREFIX", "");
      expect(resolveGatewayOptions({}).prefix).toBe("flotilla");
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it("runs the default alert rules unless told not to; thresholds as JSON, webhooks as URLs", () => {
    expect(loadConfig([], {})).toMatchObject({ alerts: {} });
    expect(loadConfig(["--alerts", "off"], {})).toMatchObject({ alerts: false });
    expect(
      loadConfig([], {
        FLOTILLA_ALERT_INTERVAL_MS: "5000",
        FLOTILLA_ALERT_THRESHOLDS: '{"depthCritical":1000,"failureRate":0.2}',
        FLOTILLA_ALERT_WEBHOOKS: "https://hooks.example/a, https://hooks.example/b",
      }),
    ).toMatchObject({
      alerts: { intervalMs: 5000, thresholds: { depthCritical: 1000, failureRate: 0.2 }, webhooks: ["https://hooks.example/a", "https://hooks.example/b"] },
    });
    expect(() => loadConfig(["--alert-thresholds", "{"], {})).toThrow(/alertThresholds.*not JSON/s);
    expect(() => loadConfig(["--alert-thresholds", '{"depth":1}'], {})).toThrow(/alertThresholds/);
    expect(() => loadConfig(["--alert-webhooks", "not a url"], {})).toThrow(/alertWebhooks/);
    expect(() => loadConfig(["--alerts", "maybe"], {})).toThrow(/alerts/);
  });

  it("signs with the first of the signing secrets, as the workers do; refuses a short one", () => {
    expect(loadConfig([], { FLOTILLA_SIGNING_SECRETS: "current-secret-0123456,older-secret-9876543" })).toMatchObject({
      signingSecret: "current-secret-0123456",
    });
    expect(() => loadConfig([], { FLOTILLA_SIGNING_SECRETS: "short" })).toThrow(/signingSecrets/);
  });

  it("reads the environment, and flags win over it", () => {
    const env = {
      FLOTILLA_GATEWAY_PORT: "9000",
      FLOTILLA_GATEWAY_HOST: "0.0.0.0",
      FLOTILLA_GATEWAY_TOKENS: JSON.stringify(TOKENS),
      FLOTILLA_GATEWAY_CORS_ORIGINS: "https://a.example, https://b.example",
      REDIS_URL: "redis://redis:6379",
      FLOTILLA_PREFIX: "p",
    };
    expect(loadConfig(["--port", "9001"], env)).toMatchObject({
      port: 9001,
      host: "0.0.0.0",
      redis: "redis://redis:6379",
      prefix: "p",
      corsOrigins: ["https://a.example", "https://b.example"],
      tokens: TOKENS,
    });
  });

  it("reads tokens from a file when the value is not JSON", () => {
    const file = join(dir, "tokens.json");
    writeFileSync(file, JSON.stringify(TOKENS));
    expect(loadConfig(["--tokens", file], {})).toMatchObject({ tokens: TOKENS });
    expect(() => loadConfig(["--tokens", join(dir, "missing.json")], {})).toThrow(/tokens/);
    expect(() => loadConfig(["--tokens", '[{"token":"x","role":"root"}]'], {})).toThrow(/token/);
  });

  it("reads the scoped tokens' signing keys as JSON or from a file, and refuses a weak or repeated one", () => {
    const keys = [
      { id: "k2", secret: "second-secret-0123456789-0123456789" },
      { id: "k1", secret: "first-secret-0123456789-0123456789" },
    ];
    expect(loadConfig([], { FLOTILLA_GATEWAY_SIGNING_KEYS: JSON.stringify(keys) })).toMatchObject({ signingKeys: keys });
    const file = join(dir, "keys.json");
    writeFileSync(file, JSON.stringify(keys));
    expect(loadConfig(["--signing-keys", file], {})).toMatchObject({ signingKeys: keys });
    expect(() => loadConfig(["--signing-keys", '[{"id":"k1","secret":"short"}]'], {})).toThrow(/32 characters/);
    expect(() => loadConfig(["--signing-keys", join(dir, "missing.json")], {})).toThrow(/signingKeys/);
    expect(loadConfig([], {})).not.toHaveProperty("signingKeys");
  });

  it("refuses a non-loopback host without tokens, an empty flag and a bad port", () => {
    expect(() => loadConfig(["--host", "0.0.0.0"], {})).toThrow(/not loopback/);
    expect(loadConfig(["--host", "0.0.0.0", "--tokens", JSON.stringify(TOKENS)], {})).toMatchObject({ host: "0.0.0.0" });
    expect(() => loadConfig(["--prefix", ""], {})).toThrow(/--prefix is empty/);
    expect(() => loadConfig(["--port", "70000"], {})).toThrow(/port/);
    expect(loadConfig(["--help"], {})).toBe("help");
  });

  it("flotilla-gateway stops on a bad setting with its reason alone, on the last line (a short token, an unknown flag): exit 2", () => {
    const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));
    const run = (args: string[], env: Record<string, string> = {}) => {
      const res = spawnSync(process.execPath, ["--conditions=@flotilla/source", main, ...args], { env: { ...process.env, ...env }, encoding: "utf8" });
      return { code: res.status, lines: res.stderr.trimEnd().split("\n") };
    };
    const short = run([], { FLOTILLA_GATEWAY_TOKENS: '[{"token":"too-short","role":"admin"}]' });
    expect(short.code).toBe(2);
    expect(short.lines).toHaveLength(1);
    expect(short.lines.at(-1)).toMatch(/^flotilla-gateway: .*token.*16 characters or more/);
    const unknown = run(["--prot", "9000"]);
    expect(unknown.code).toBe(2);
    expect(unknown.lines).toEqual([expect.stringMatching(/--prot/)]);
  });
});
