// The gateway's Dockerfile and its docker-compose.yml service, read as files (no Docker engine runs
// here), checked as tooling/test/deploy-files.test.ts checks the worker's.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (path: string) => readFileSync(new URL(path, import.meta.url), "utf8");

/** Instructions with continuation lines joined and comments dropped. */
function instructions(dockerfile: string): Array<{ keyword: string; args: string }> {
  return dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"))
    .map((l) => {
      const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(l) ?? [];
      return { keyword: keyword.toUpperCase(), args };
    });
}

describe("apps/gateway/Dockerfile", () => {
  const all = instructions(read("../Dockerfile"));

  it("installs from the lockfile before the sources are copied, and deploys the gateway with production dependencies", () => {
    const copyAll = all.findIndex((i) => i.keyword === "COPY" && /^\.\s+\.$/.test(i.args));
    const fetch = all.findIndex((i) => i.keyword === "RUN" && /\bpnpm fetch\b/.test(i.args));
    expect(fetch).toBeGreaterThan(-1);
    expect(fetch).toBeLessThan(copyAll);
    expect(all.some((i) => i.keyword === "RUN" && /pnpm install --offline --frozen-lockfile/.test(i.args))).toBe(true);
    expect(all.some((i) => i.keyword === "RUN" && /--filter @flotilla\/gateway deploy .*--prod/.test(i.args))).toBe(true);
  });

  it("listens on 0.0.0.0, health-checks /healthz with node on its port, and runs as the node user", () => {
    expect(all.some((i) => i.keyword === "ENV" && /FLOTILLA_GATEWAY_HOST=0\.0\.0\.0/.test(i.args) && /FLOTILLA_GATEWAY_PORT=8080/.test(i.args))).toBe(true);
    const check = all.find((i) => i.keyword === "HEALTHCHECK")!;
    const command = JSON.parse(check.args.slice(check.args.indexOf("CMD ") + 4)) as string[];
    expect(command[0]).toBe("node");
    expect(command.join(" ")).toContain("/healthz");
    expect(check.args).toContain("process.env.FLOTILLA_GATEWAY_PORT");
    expect(all.filter((i) => i.keyword === "USER").at(-1)?.args).toBe("node");
    expect(all.find((i) => i.keyword === "ENTRYPOINT")?.args).toBe('["node", "dist/main.js"]');
  });
});

describe("docker-compose.yml gateway service", () => {
  const compose = read("../../../docker-compose.yml");
  // The service's block: from its key to the next key at the same indentation.
  const block = /^ {2}gateway:\n((?: {4}.*\n|\s*\n)+)/m.exec(compose)?.[1] ?? "";

  it("builds the gateway image, publishes it on loopback only, and gives it tokens (it refuses 0.0.0.0 without)", () => {
    expect(block).toContain("dockerfile: apps/gateway/Dockerfile");
    expect(block).toMatch(/ports: \["127\.0\.0\.1:\$\{FLOTILLA_GATEWAY_PORT:-8080\}:8080"\]/);
    expect(block).toMatch(/FLOTILLA_GATEWAY_HOST: 0\.0\.0\.0/);
    expect(block).toMatch(/FLOTILLA_GATEWAY_PORT: "8080"/);
    expect(block).toMatch(/FLOTILLA_GATEWAY_TOKENS: '\[\{"token":/);
    expect(block).toMatch(/REDIS_URL: redis:\/\/redis:6379/);
    expect(block).toMatch(/redis:\n\s+condition: service_healthy/);
  });
});
