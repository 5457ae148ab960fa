export { logSink, readAlerts, redisStreamSink, webhookSink } from "./alert-sinks.ts";
export {
  type AlertEvent,
  AlertManager,
  type AlertManagerOptions,
  type AlertRule,
  type AlertSink,
  type AlertThresholds,
  defaultRules,
  type RuleVerdict,
  type Severity,
} from "./alerts.ts";
export { type QueueState, readFleetFigures } from "./fleet-figures.ts";
export {
  attributeKey,
  type BusGroupFigures,
  DURATION_BUCKETS,
  defaultMetrics,
  FlotillaMetrics,
  type FlotillaMetricsOptions,
  type HistogramSummary,
  METRICS,
  type MetricsSnapshot,
  PUBLISH_BUCKETS,
  type QueueFigures,
  SECONDS_METRICS,
} from "./metrics.ts";
export { extractTrace, injectTrace, SpanKind, type SpanOptions, type TraceCarrier, tracer, withSpan } from "./tracing.ts";
