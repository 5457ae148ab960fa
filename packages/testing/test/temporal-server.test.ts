import { connect } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { startTemporalServer, temporalBinary } from "../src/index.ts";
import { useTemporalBinary } from "../src/vitest.ts";

describe("startTemporalServer with a binary", () => {
  const binary = useTemporalBinary();

  it("starts a dev server on loopback with the default namespace, and stops it", async () => {
    const server = await startTemporalServer(binary);
    const [host, port] = server.address.split(":");
    const answers = () =>
      new Promise<boolean>((resolve) => {
        const s = connect(Number(port), host);
        s.once("connect", () => {
          s.destroy();
          resolve(true);
        });
        s.once("error", () => resolve(false));
      });
    try {
      expect(host).toBe("127.0.0.1");
      expect(server.namespace).toBe("default");
      expect(await answers()).toBe(true);
      // The HTTP API listens on the port chosen for it, not one the server picked itself.
      const res = await fetch(`http://${server.httpAddress}/api/v1/namespaces/default`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ namespaceInfo: { name: "default" } });
    } finally {
      await server.stop();
    }
    expect(await answers()).toBe(false);
  }, 90_000);
});

describe("startTemporalServer", () => {
  it("fails with a clear message when the binary is missing or broken", async () => {
    vi.stubEnv("FLOTILLA_TEMPORAL_BIN", "/nonexistent/temporal");
    try {
      expect(temporalBinary()).toBeUndefined();
      await expect(startTemporalServer()).rejects.toThrow(/no Temporal binary/);
    } finally {
      vi.unstubAllEnvs();
    }
    await expect(startTemporalServer("/nonexistent/temporal", { startTimeoutMs: 5000 })).rejects.toThrow(/could not start/);
  });
});
