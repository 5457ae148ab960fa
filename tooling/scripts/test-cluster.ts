// Starts a Redis Cluster for the test suite (3 masters, 1 replica each, loopback ports), prints its
// seed nodes as one line (`nodes 127.0.0.1:p1,…`), and keeps it up until this process is told to
// stop (SIGTERM, SIGINT, or its stdin closing), then stops every node and removes their data.
// Run by the suite's global setup under FLOTILLA_TEST_REDIS=cluster; by hand:
//   node --conditions=@flotilla/source tooling/scripts/test-cluster.ts
import { startRedisCluster } from "@flotilla/testing";

const cluster = await startRedisCluster({ masters: 3, replicasPerMaster: 1 });
process.stdout.write(`nodes ${cluster.nodeList}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void cluster.stop().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
// The parent (the test run) went away without a word: stop too, leaving no server behind.
process.stdin.on("end", stop);
process.stdin.resume();
