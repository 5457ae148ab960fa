import { type Attributes, type Context, context, propagation, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";

/** W3C trace context as a task carries it (`traceparent`, `tracestate`). */
export type TraceCarrier = Record<string, string>;

export const tracer = () => trace.getTracer("@flotilla");

/** The active context as a carrier for the task, or undefined when no propagator wrote anything (no SDK registered). */
export function injectTrace(ctx: Context = context.active()): TraceCarrier | undefined {
  const carrier: TraceCarrier = {};
  propagation.inject(ctx, carrier);
  return Object.keys(carrier).length ? carrier : undefined;
}

/** The context a task's carrier names (the root context when it names none). */
export function extractTrace(carrier: TraceCarrier | undefined): Context {
  return carrier ? propagation.extract(context.active(), carrier) : context.active();
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent; default the active context. */
  parent?: Context;
}

/**
 * Runs `fn` inside a new active span, ending it when `fn` settles; an error is recorded on the span
 * (and rethrown). With no tracer provider registered this costs a no-op span.
 */
export async function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(name, { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes ?? {} }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      span.recordException(err instanceof Error ? err : { name: "Error", message: String(err) });
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      throw err;
    } finally {
      span.end();
    }
  });
}

export { SpanKind } from "@opentelemetry/api";
