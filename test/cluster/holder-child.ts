import { createHolderElection } from "../../src/cluster/holder.ts";
import { createLeases, type Lease } from "../../src/cluster/leases.ts";
import { createClusterPool } from "../../src/cluster/pool.ts";

/**
 * One instance of the holder test (holder.test.ts), as its own process so kill -9 is real: it runs the
 * election with the production numbers and, while it believes it holds the lease, writes a fenced row to
 * `holder_log` every 100 ms. The log is the test's witness: two holders at one moment would show as
 * interleaved fences.
 */
const url = process.env.CLUSTER_TEST_URL;
const instance = process.env.CLUSTER_TEST_INSTANCE;
if (!url || !instance) throw new Error("CLUSTER_TEST_URL and CLUSTER_TEST_INSTANCE are required");

const db = createClusterPool({ connectionString: url });
const leases = createLeases(db);
let beat: NodeJS.Timeout | undefined;

const write = (lease: Lease) =>
  leases
    .fenced(lease, (client) =>
      client.query("INSERT INTO holder_log (fence, instance, at) VALUES ($1, $2, clock_timestamp())", [
        lease.fence,
        instance,
      ]),
    )
    .catch((error: unknown) => process.stdout.write(`refused ${String(error)}\n`));

const election = createHolderElection({
  leases,
  name: "long-connection:cli_test",
  instance,
  onElected(lease) {
    process.stdout.write(`elected ${lease.fence}\n`);
    beat = setInterval(() => {
      const current = election.lease();
      if (current) void write(current);
    }, 100);
  },
  onDemoted(reason) {
    clearInterval(beat);
    process.stdout.write(`demoted ${reason}\n`);
  },
});
election.start();
process.stdout.write("started\n");
process.on("SIGTERM", () => {
  void election.stop().then(() => db.end().then(() => process.exit(0)));
});
