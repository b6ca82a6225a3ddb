import { WebSocket } from "ws";
import { z } from "zod";
import {
  decodeFrame,
  type Emulator,
  encodeFrame,
  type Frame,
  METHOD,
} from "../../src/local/emulator/index.ts";

/**
 * A bare long-connection client for tests that need to misbehave where the SDK's WSClient would not (ack late,
 * never ack, ping by hand). It does the handshake the way the SDK does: endpoint POST, then the ticket URL.
 */

const endpointAnswer = z.object({
  code: z.number(),
  msg: z.string().optional(),
  data: z.object({ URL: z.string().optional(), ClientConfig: z.record(z.string(), z.number()).optional() }),
});

export async function endpoint(emulator: Emulator, appSecret = emulator.appSecret) {
  const response = await fetch(`${emulator.url}/callback/ws/endpoint`, {
    method: "POST",
    headers: { "content-type": "application/json", locale: "zh" },
    body: JSON.stringify({ AppID: emulator.appId, AppSecret: appSecret }),
  });
  return endpointAnswer.parse(await response.json());
}

export interface RawClient {
  socket: WebSocket;
  /** Every frame received, decoded. */
  frames: Frame[];
  /** Data frames received, with their payload parsed (fragments as they came). */
  data(): Frame[];
  ping(): void;
  /** Acks a received data frame like the SDK: same frame back, payload {code, data: base64(JSON)}. */
  ack(frame: Frame, answer?: unknown, code?: number): void;
  next(predicate: (frame: Frame) => boolean): Promise<Frame>;
  close(): void;
}

export async function connectRaw(emulator: Emulator): Promise<RawClient> {
  const answer = await endpoint(emulator);
  if (answer.code !== 0 || !answer.data.URL) throw new Error(`endpoint refused: ${answer.code}`);
  const service = Number(new URL(answer.data.URL).searchParams.get("service_id"));
  const socket = new WebSocket(answer.data.URL);
  const frames: Frame[] = [];
  const waiters: { predicate: (frame: Frame) => boolean; resolve: (frame: Frame) => void }[] = [];
  socket.on("message", (data) => {
    const frame = decodeFrame(new Uint8Array(data as Buffer));
    frames.push(frame);
    for (const waiter of waiters.splice(0)) {
      if (waiter.predicate(frame)) waiter.resolve(frame);
      else waiters.push(waiter);
    }
  });
  await new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  const send = (frame: Frame) => socket.send(encodeFrame(frame));
  // As the SDK does on open: a first ping, whose pong says the platform counts the connection online (the
  // emulator delivers only to a connection that has pinged). Its pong is not one of the test's frames.
  const greeted = new Promise<void>((resolve) =>
    waiters.push({
      predicate: (f) => f.method === METHOD.control && f.headers.type === "pong",
      resolve: () => resolve(),
    }),
  );
  send({ SeqID: 0, LogID: 0, service, method: METHOD.control, headers: { type: "ping" } });
  await greeted;
  frames.length = 0;
  return {
    socket,
    frames,
    data: () => frames.filter((frame) => frame.method === METHOD.data),
    ping: () => send({ SeqID: 0, LogID: 0, service, method: METHOD.control, headers: { type: "ping" } }),
    ack(frame, result, code = 200) {
      const body =
        result === undefined
          ? { code }
          : { code, data: Buffer.from(JSON.stringify(result)).toString("base64") };
      send({ ...frame, payload: new TextEncoder().encode(JSON.stringify(body)) });
    },
    next(predicate) {
      const found = frames.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    close: () => socket.terminate(),
  };
}

export const payloadOf = (frame: Frame): unknown =>
  JSON.parse(Buffer.from(frame.payload ?? []).toString("utf8"));
