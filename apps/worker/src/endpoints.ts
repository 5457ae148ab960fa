import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { FlotillaMetrics } from "@flotilla/metrics";
import { metrics } from "@opentelemetry/api";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { workerMeterProvider } from "./telemetry.ts";

export interface Endpoints {
  /** The metrics the worker should record into (Prometheus-exported). */
  metrics: FlotillaMetrics;
  port: number;
  close(): Promise<void>;
}

/** What `/readyz` reports: the worker's readiness and, when not ready, why. */
export interface ReadinessReport {
  ready: boolean;
  reasons: ReadonlyArray<{ reason: string; detail: string }>;
}

/**
 * The worker's opt-in HTTP endpoints, for Prometheus and Kubernetes probes:
 * `/metrics` (Prometheus text, through the OpenTelemetry Prometheus exporter; `target_info` names
 * the service and the worker id), `/healthz` (the process answers) and `/readyz` (connected to Redis
 * and claiming: 200, else 503 with the reasons).
 */
export async function startEndpoints(port: number, readiness: () => ReadinessReport, workerId: string, host = "0.0.0.0"): Promise<Endpoints> {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  const provider = workerMeterProvider(workerId, exporter);
  // Registered globally too, so anything else the process instruments is scraped as well.
  metrics.setGlobalMeterProvider(provider);
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0];
    if (path === "/metrics") return exporter.getMetricsRequestHandler(req, res);
    if (path === "/healthz") {
      res.writeHead(200, { "content-type": "application/json" }).end('{"status":"ok"}');
      return;
    }
    if (path === "/readyz") {
      const { ready, reasons } = readiness();
      const body = ready ? { status: "ready" } : { status: "not ready", reasons: reasons.map(({ reason, detail }) => ({ reason, detail })) };
      res.writeHead(ready ? 200 : 503, { "content-type": "application/json" }).end(JSON.stringify(body));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    metrics: new FlotillaMetrics({ meterProvider: provider }),
    port: (server.address() as AddressInfo).port,
    close: async () => {
      await new Promise((r) => server.close(r));
      await provider.shutdown();
    },
  };
}
