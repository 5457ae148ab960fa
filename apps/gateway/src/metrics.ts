/**
 * The gateway's Prometheus metrics, kept in memory and written in the text exposition format by
 * hand: two counters and a gauge do not justify an OpenTelemetry pipeline (the worker app has one).
 */
export class GatewayMetrics {
  /** Requests by `method route status`; the route is the pattern (`/v1/tasks/:id`), never the raw path, so ids add no series. */
  private readonly requests = new Map<string, { method: string; route: string; status: number; count: number }>();
  private streamsOpen = 0;
  private streamsTotal = 0;

  countRequest(method: string, route: string, status: number): void {
    const key = `${method} ${route} ${status}`;
    const row = this.requests.get(key);
    if (row) row.count++;
    else this.requests.set(key, { method, route, status, count: 1 });
  }

  streamOpened(): void {
    this.streamsOpen++;
    this.streamsTotal++;
  }

  streamClosed(): void {
    this.streamsOpen--;
  }

  /** The text exposition format (version 0.0.4). */
  render(): string {
    const lines = [
      "# HELP flotilla_gateway_http_requests_total HTTP requests answered, by method, route pattern and status.",
      "# TYPE flotilla_gateway_http_requests_total counter",
    ];
    for (const r of this.requests.values()) {
      lines.push(`flotilla_gateway_http_requests_total{method="${label(r.method)}",route="${label(r.route)}",status="${r.status}"} ${r.count}`);
    }
    lines.push(
      "# HELP flotilla_gateway_sse_streams_open Server-Sent Events streams open now.",
      "# TYPE flotilla_gateway_sse_streams_open gauge",
      `flotilla_gateway_sse_streams_open ${this.streamsOpen}`,
      "# HELP flotilla_gateway_sse_streams_total Server-Sent Events streams opened since start.",
      "# TYPE flotilla_gateway_sse_streams_total counter",
      `flotilla_gateway_sse_streams_total ${this.streamsTotal}`,
    );
    return `${lines.join("\n")}\n`;
  }
}

/** A label value escaped as the exposition format requires (backslash, double quote, newline). */
function label(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
