// The container files, read as files: docker-compose.yml, apps/worker/Dockerfile, .dockerignore,
// tooling/prometheus.yml and deploy/k8s. No Docker engine runs these tests, so they check what the files say: the
// ports a developer's machine sees, which image carries what, that every worker is health-checked
// and scraped, and that the build context and layers are what the comments promise.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CONSUMER_GROUP, createKeys } from "@flotilla/core";
import { METRICS, SECONDS_METRICS } from "@flotilla/metrics";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const root = new URL("../../", import.meta.url);
const read = (path: string) => readFileSync(fileURLToPath(new URL(path, root)), "utf8");

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string; target?: string };
  command?: string[];
  ports?: string[];
  environment?: Record<string, string>;
  healthcheck?: { disable?: boolean; test?: string[] };
  depends_on?: Record<string, { condition: string }>;
  profiles?: string[];
  volumes?: string[];
}

const compose: { services: Record<string, Service> } = parse(read("docker-compose.yml"), { merge: true });
const services = compose.services;
const workerServices = Object.entries(services).filter(([, s]) => s.build?.dockerfile === "apps/worker/Dockerfile");

/** `${NAME:-default}` as compose reads it with NAME unset. */
const withDefaults = (value: string) => value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, "$1");

/** A port mapping `[ip:]host:container` with compose's variables at their defaults. */
function published(mapping: string): { ip?: string; host: number; container: number } {
  const parts = withDefaults(mapping).split(":");
  const container = Number(parts.pop());
  const host = Number(parts.pop());
  return { ip: parts[0], host, container };
}

interface Instruction {
  keyword: string;
  args: string;
}
interface Stage {
  from: string;
  name: string | undefined;
  instructions: Instruction[];
}

/** The Dockerfile's stages and their instructions (continuation lines joined, comments dropped). */
function stages(dockerfile: string): Stage[] {
  const lines = dockerfile
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const out: Stage[] = [];
  for (const line of lines) {
    const [, keyword = "", args = ""] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    if (keyword.toUpperCase() === "FROM") {
      const [, from = "", name] = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(args) ?? [];
      out.push({ from, name, instructions: [] });
    } else {
      out.at(-1)!.instructions.push({ keyword: keyword.toUpperCase(), args });
    }
  }
  return out;
}

const dockerfile = stages(read("apps/worker/Dockerfile"));
const stage = (name: string) => {
  const found = dockerfile.find((s) => s.name === name);
  expect(found, `stage ${name}`).toBeDefined();
  return found!;
};
/** A stage's instructions with those of the stages it is built FROM, oldest first. */
function lineage(name: string): Instruction[] {
  const s = stage(name);
  const parent = dockerfile.find((p) => p.name === s.from);
  return [...(parent ? lineage(parent.name!) : []), ...s.instructions];
}
/** The RUN lines of the stage an image's `COPY --from=<stage> /out` takes its files from. */
function deployOf(target: string): string {
  const copy = lineage(target).find((i) => i.keyword === "COPY" && i.args.startsWith("--from="));
  expect(copy, `${target} copies its app from a build stage`).toBeDefined();
  const from = /^--from=(\S+)/.exec(copy!.args)![1]!;
  return stage(from)
    .instructions.filter((i) => i.keyword === "RUN")
    .map((i) => i.args)
    .join("\n");
}

describe("docker-compose.yml", () => {
  it("publishes Redis on a loopback port other than 6379, so a local Redis keeps its port", () => {
    const ports = (services.redis!.ports ?? []).map(published);
    for (const port of ports) {
      expect(port.host).not.toBe(6379);
      expect(port.ip).toBe("127.0.0.1");
    }
    // The header tells a user where to submit from the host.
    const header = read("docker-compose.yml").split("services:")[0]!;
    for (const port of ports) expect(header).toContain(`REDIS_URL=redis://127.0.0.1:${port.host}`);
  });

  it("builds each worker image once, under a tag of its own, from its own target", () => {
    expect(workerServices.map(([name]) => name).sort()).toEqual(["worker", "worker-temporal"]);
    const builds = workerServices.map(([, s]) => `${s.build!.dockerfile}#${s.build!.target}`);
    expect(new Set(builds).size).toBe(builds.length);
    for (const [name, s] of workerServices) expect(s.image, `${name} tags its image`).toMatch(/^flotilla-worker:/);
    expect(services.worker!.build!.target).toBe("worker");
    expect(services["worker-temporal"]!.build!.target).toBe("temporal");
    // Any other service that runs a worker image uses the tag, never a build of its own.
    const tags = new Set(workerServices.map(([, s]) => s.image));
    for (const [name, s] of Object.entries(services)) {
      if (s.image && tags.has(s.image) && !workerServices.some(([n]) => n === name)) expect(s.build, name).toBeUndefined();
    }
  });

  it("health-checks every worker: the image's /healthz check stays on, on the port the worker serves", () => {
    for (const [name, s] of workerServices) {
      expect(s.healthcheck?.disable, name).not.toBe(true);
      expect(s.environment?.FLOTILLA_METRICS_PORT, name).toBe("9464");
    }
    expect(services.prometheus!.depends_on?.worker?.condition).toBe("service_healthy");
  });

  it("runs Temporal with its UI, published on loopback", () => {
    const temporal = services.temporal!;
    expect(temporal.command).not.toContain("--headless");
    const ui = temporal.command![temporal.command!.indexOf("--ui-port") + 1];
    expect(ui).toBe("8233");
    expect((temporal.ports ?? []).map(published)).toContainEqual({ ip: "127.0.0.1", host: 8233, container: 8233 });
  });

  it("Prometheus scrapes every replica of every worker service, on its metrics port", () => {
    expect(services.prometheus!.volumes).toContain("./tooling/prometheus.yml:/etc/prometheus/prometheus.yml:ro");
    const prometheus: { scrape_configs: { dns_sd_configs?: { names: string[]; type: string; port: number }[] }[] } = parse(read("tooling/prometheus.yml"));
    const scraped = prometheus.scrape_configs.flatMap((job) => job.dns_sd_configs ?? []);
    for (const [name, s] of workerServices) {
      // A DNS service-discovery name is answered with every replica's address; a static target is one.
      const sd = scraped.find((c) => c.names.includes(name));
      expect(sd, `${name} is scraped`).toBeDefined();
      expect(sd!.type).toBe("A");
      expect(sd!.port).toBe(Number(s.environment!.FLOTILLA_METRICS_PORT));
    }
  });
});

describe("apps/worker/Dockerfile", () => {
  it("installs dependencies from the lockfile before the sources are copied, so a source edit reuses that layer", () => {
    const build = lineage("build");
    const copyAll = build.findIndex((i) => i.keyword === "COPY" && /^\.\s+\.$/.test(i.args));
    const fetch = build.findIndex((i) => i.keyword === "RUN" && /\bpnpm (fetch|install)\b/.test(i.args));
    expect(copyAll).toBeGreaterThan(0);
    expect(fetch).toBeGreaterThan(-1);
    expect(fetch).toBeLessThan(copyAll);
    for (const copy of build.slice(0, fetch).filter((i) => i.keyword === "COPY")) {
      for (const file of copy.args.split(/\s+/).slice(0, -1)) expect(file).toMatch(/^(package\.json|pnpm-lock\.yaml|pnpm-workspace\.yaml)$/);
    }
    // The install after the copy takes what the fetch brought, and the lockfile as it is.
    expect(build.slice(copyAll).some((i) => i.keyword === "RUN" && /pnpm install --offline --frozen-lockfile/.test(i.args))).toBe(true);
  });

  it("has a Temporal target, and the default target (the last stage) leaves Temporal and its native binaries out", () => {
    expect(dockerfile.at(-1)!.name).toBe("worker");
    // @flotilla/temporal is only an optional dependency of the worker app: --no-optional leaves it out.
    const app = JSON.parse(read("apps/worker/package.json"));
    expect(app.optionalDependencies).toHaveProperty("@flotilla/temporal");
    expect(app.dependencies).not.toHaveProperty("@flotilla/temporal");
    expect(deployOf("worker")).toMatch(/deploy .*--prod --no-optional/);
    expect(deployOf("temporal")).toMatch(/deploy .*--prod/);
    expect(deployOf("temporal")).not.toMatch(/--no-optional/);
  });

  it("both images check /healthz on the metrics port they serve, and run as the node user", () => {
    for (const target of ["worker", "temporal"]) {
      const all = lineage(target);
      const check = all.find((i) => i.keyword === "HEALTHCHECK");
      expect(check, target).toBeDefined();
      expect(check!.args).toMatch(/CMD .*\/healthz/);
      // Exec form, valid JSON (otherwise Docker hands the text to /bin/sh, quotes and all), and run with
      // the node the image has: the slim image has no curl or wget.
      const command = JSON.parse(check!.args.slice(check!.args.indexOf("CMD ") + 4));
      expect(command[0]).toBe("node");
      expect(check!.args).toContain("process.env.FLOTILLA_METRICS_PORT");
      expect(all.some((i) => i.keyword === "ENV" && /FLOTILLA_METRICS_PORT=9464/.test(i.args))).toBe(true);
      expect(all.filter((i) => i.keyword === "USER").at(-1)?.args).toBe("node");
    }
  });
});

describe(".dockerignore", () => {
  it("keeps secrets, installed dependencies, history and the downloaded toolchain out of the build context", () => {
    const patterns = new Set(
      read(".dockerignore")
        .split("\n")
        .map((l) => l.trim())
        .filter((l) => l && !l.startsWith("#")),
    );
    const toolchain = /^TOOLCHAIN="\$ROOT\/([^"]+)"$/m.exec(read("tooling/scripts/flotilla.sh"))![1]!;
    for (const pattern of [".env", "**/.env", ".env.*", "**/node_modules", ".git", toolchain, "**/dist"]) expect(patterns, pattern).toContain(pattern);
  });
});

// deploy/k8s: the worker's Deployment and the KEDA ScaledObjects that scale it, checked against what
// the worker reads and exposes (no cluster runs them here).
describe("deploy/k8s", () => {
  interface EnvVar {
    name: string;
    value?: string;
  }
  interface Container {
    image: string;
    env: EnvVar[];
    ports: Array<{ name: string; containerPort: number }>;
    readinessProbe: { httpGet: { path: string; port: string } };
    livenessProbe: { httpGet: { path: string; port: string } };
  }
  const deployment: {
    kind: string;
    metadata: { name: string };
    spec: { template: { spec: { terminationGracePeriodSeconds: number; containers: Container[] } } };
  } = parse(read("deploy/k8s/worker-deployment.yaml"));
  const [container] = deployment.spec.template.spec.containers;
  const env = new Map(container!.env.map((e) => [e.name, e.value]));
  type Trigger = { type: string; metadata: Record<string, string> };
  const scaled = (file: string): { kind: string; spec: { scaleTargetRef: { name: string }; triggers: Trigger[] } } => parse(read(file));

  it("runs the worker image with its probes on the metrics port, and drains within the grace period", () => {
    expect(deployment.kind).toBe("Deployment");
    expect(container!.image).toMatch(/^flotilla-worker:/);
    const port = container!.ports.find((p) => p.name === "metrics")!.containerPort;
    expect(env.get("FLOTILLA_METRICS_PORT")).toBe(String(port));
    expect(container!.readinessProbe.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    expect(container!.livenessProbe.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(deployment.spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(Number(env.get("FLOTILLA_DRAIN_TIMEOUT_MS")));
    // Every setting it gives is one the worker app reads (its README's table lists them all).
    const documented = read("apps/worker/README.md");
    for (const name of env.keys()) if (name.startsWith("FLOTILLA_") || name === "REDIS_URL") expect(documented, name).toContain(`\`${name}\``);
  });

  it("scales on the lag of every lane of the queue the workers serve, by the keys and group the broker uses", () => {
    const object = scaled("deploy/k8s/keda-scaledobject.yaml");
    expect(object.kind).toBe("ScaledObject");
    expect(object.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    const keys = createKeys("flotilla");
    const queue = env.get("FLOTILLA_QUEUES")!;
    expect(object.spec.triggers.map((t) => t.metadata.stream).sort()).toEqual((["high", "normal", "low"] as const).map((p) => keys.lane(queue, p)).sort());
    for (const t of object.spec.triggers) {
      expect(t.type).toBe("redis-streams");
      expect(t.metadata.consumerGroup).toBe(CONSUMER_GROUP);
      expect(Number(t.metadata.lagCount)).toBeGreaterThan(0);
      // KEDA reads these from the target's container.
      expect(env.has(t.metadata.addressFromEnv!)).toBe(true);
      expect(env.has(t.metadata.passwordFromEnv!)).toBe(true);
    }
  });

  it("the Prometheus variant queries gauges the worker exposes, by their Prometheus names", () => {
    const object = scaled("deploy/k8s/keda-scaledobject-prometheus.yaml");
    expect(object.spec.scaleTargetRef.name).toBe(deployment.metadata.name);
    const exposed = (name: string) => `${name.replaceAll(".", "_")}${SECONDS_METRICS.includes(name) ? "_seconds" : ""}`;
    const queried = object.spec.triggers.map((t) => /^\w+\((\w+)\{/.exec(t.metadata.query!)?.[1]);
    expect(queried).toEqual([exposed(METRICS.queueDepth), exposed(METRICS.queueOldestWait)]);
  });
});
