#!/usr/bin/env node
// The flotilla-gateway process: reads its configuration, serves until SIGTERM / SIGINT, then closes
// its event streams and connections. Exit codes: 0 after a clean stop, 2 for a bad configuration, 1 otherwise.
import { loadConfig, USAGE } from "./config.ts";
import { createGateway } from "./gateway.ts";
import { jsonLog } from "./json-log.ts";

async function main(): Promise<number> {
  let config: ReturnType<typeof loadConfig>;
  try {
    config = loadConfig(process.argv.slice(2), process.env);
  } catch (err) {
    // The reason alone, on the last line: printed above the usage, it scrolled out of sight.
    process.stderr.write(`flotilla-gateway: ${(err as Error).message} (flotilla-gateway --help lists every setting)\n`);
    return 2;
  }
  if (config === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  const log = jsonLog("flotilla-gateway");
  const gateway = createGateway({ ...config, logger: log });
  const address = await gateway.start();
  if ((config.tokens ?? []).length === 0) log.warn("no tokens configured: authentication is off (loopback only)");
  log.info("ready", { url: address.url, port: address.port });
  await new Promise<string>((resolve) => {
    process.once("SIGTERM", () => resolve("SIGTERM"));
    process.once("SIGINT", () => resolve("SIGINT"));
  }).then((signal) => log.info("stopping", { signal }));
  await gateway.close();
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`flotilla-gateway: ${(err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
