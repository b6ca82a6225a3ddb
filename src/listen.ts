import type { Server } from "node:http";
import { AppError } from "./errors.ts";

/**
 * Starting the HTTP server, with the one failure a newcomer meets first — the port is taken — turned into a
 * sentence instead of an `EADDRINUSE` stack. Other listen errors (EACCES on a low port, a bad host) keep their
 * own message, still without a stack.
 */

export class PortInUseError extends AppError {
  readonly port: number;

  constructor(port: number, cause: unknown) {
    super(
      "CONFLICT",
      `port ${port} is already in use (is another copy running?); stop it, or pick another port: PORT=${port + 1} npm start`,
      { cause },
    );
    this.name = "PortInUseError";
    this.port = port;
  }
}

export class ListenError extends AppError {
  constructor(port: number, cause: unknown) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super("INTERNAL", `cannot listen on port ${port}: ${reason}`, { cause });
    this.name = "ListenError";
  }
}

/** Listens and resolves with the port actually bound (port 0 picks a free one). */
export function listen(server: Server, options: { port: number; host?: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException) => {
      reject(
        error.code === "EADDRINUSE"
          ? new PortInUseError(options.port, error)
          : new ListenError(options.port, error),
      );
    };
    server.once("error", onError);
    server.listen(options.port, options.host, () => {
      server.off("error", onError);
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : options.port);
    });
  });
}
