import { SECONDS_METRICS } from "@flotilla/metrics";
import { defaultResource, detectResources, envDetector, type Resource, resourceFromAttributes } from "@opentelemetry/resources";
import { MeterProvider, type MetricReader } from "@opentelemetry/sdk-metrics";

/**
 * Who reports the figures: `service.name` "flotilla-worker" and `service.instance.id` the worker id
 * (a Prometheus scrape shows them on `target_info`), so no series says `unknown_service:node`.
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES still win, as with any OpenTelemetry SDK.
 */
export function workerResource(workerId: string): Resource {
  return defaultResource()
    .merge(resourceFromAttributes({ "service.name": "flotilla-worker", "service.instance.id": workerId }))
    .merge(detectResources({ detectors: [envDetector] }));
}

/**
 * The worker app's MeterProvider. Its views name the duration histograms with their unit, as the
 * Prometheus convention has it (`flotilla_task_duration_seconds`): OpenTelemetry names them
 * without one, and this Prometheus exporter adds no unit suffix itself.
 */
export function workerMeterProvider(workerId: string, reader: MetricReader): MeterProvider {
  return new MeterProvider({
    resource: workerResource(workerId),
    readers: [reader],
    views: SECONDS_METRICS.map((name) => ({ instrumentName: name, name: `${name}.seconds` })),
  });
}
