import net from "node:net";

/**
 * Ports for the real `src/main.ts` in a child process. A server in the test's own process listens on port 0
 * and reads back the port it got (`server.address()`), the one race-free way, and every in-process rig does
 * that. A child must be told its port instead: card links (PUBLIC_URL's default) and the host guard name the
 * configured port, so PORT=0 would put `localhost:0` on every card. So a child gets a port that was free a
 * moment ago, and `onFreePort` starts it again on another one when it lost that port to someone else in
 * between (it exits saying so: listen.ts PortInUseError), instead of failing the test.
 */

/** A port nothing listens on right now (the OS picked it for a listen on port 0, then let it go). */
export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (typeof address !== "object" || address === null) throw new Error("listen on port 0 gave no port");
  return address.port;
}

/** What the bot prints when its port is taken (listen.ts PortInUseError), in its output or an error. */
export function lostPort(text: string): boolean {
  return /port \d+ is already in use/.test(text);
}

/**
 * Runs `start(port)` on a free port; when it fails because the port was taken meanwhile (its error carries
 * the child's output, as every start helper's does), once more on another, up to `attempts` times.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, attempts = 3): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    try {
      return await start(port);
    } catch (error) {
      const text = error instanceof Error ? error.message : String(error);
      if (attempt >= attempts || !lostPort(text)) throw error;
    }
  }
}
