// A flotilla-gateway for the benchmarks: on a free loopback port, no tokens; prints "ready <port>".
import { createGateway } from "@flotilla/gateway";

const gateway = createGateway({ redis: process.env.REDIS_URL, prefix: process.env.BENCH_PREFIX, port: 0 });
const { port } = await gateway.start();
process.stdout.write(`ready ${port}\n`);
process.on("SIGTERM", () => void gateway.close().then(() => process.exit(0)));
