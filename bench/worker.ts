import { parentPort, Worker } from "node:worker_threads";

/**
 * Load generators run in a worker thread, so the client's own work (encryption, HTTP, thousands of sockets)
 * neither shares the bot's event loop nor shows up in its heap. A tiny request/response protocol over
 * postMessage; the worker loads its TypeScript file through tsx's API.
 */

interface Envelope<T> {
  id: number;
  value?: T;
  error?: string;
}

export interface TsWorker<Req, Res> {
  call(request: Req): Promise<Res>;
  close(): Promise<void>;
}

export function startTsWorker<Req, Res>(file: URL, workerData?: unknown): TsWorker<Req, Res> {
  const api = import.meta.resolve("tsx/esm/api");
  const source = `import(${JSON.stringify(api)}).then(({ tsImport }) => tsImport(${JSON.stringify(file.href)}, ${JSON.stringify(file.href)}))`;
  // execArgv: [] — a worker refuses --expose-gc, which the benchmark process runs with.
  const worker = new Worker(source, { eval: true, execArgv: [], workerData });
  let nextId = 1;
  const pending = new Map<number, { resolve: (value: Res) => void; reject: (error: Error) => void }>();
  worker.on("message", (message: Envelope<Res>) => {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error !== undefined) waiter?.reject(new Error(message.error));
    else waiter?.resolve(message.value as Res);
  });
  worker.on("error", (error) => {
    for (const waiter of pending.values()) waiter.reject(error);
    pending.clear();
  });
  return {
    call(request) {
      const id = nextId++;
      return new Promise<Res>((resolve, reject) => {
        pending.set(id, { resolve, reject });
        worker.postMessage({ id, value: request });
      });
    },
    async close() {
      await worker.terminate();
    },
  };
}

/** Inside a worker: answers each request with the handler's result (or its error message). */
export function serveWorker<Req, Res>(handler: (request: Req) => Promise<Res>): void {
  const port = parentPort;
  if (!port) throw new Error("serveWorker runs inside a worker thread");
  port.on("message", (message: Envelope<Req>) => {
    handler(message.value as Req).then(
      (value) => port.postMessage({ id: message.id, value }),
      (error: unknown) =>
        port.postMessage({ id: message.id, error: error instanceof Error ? error.message : String(error) }),
    );
  });
}
