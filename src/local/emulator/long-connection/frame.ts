import protobuf from "protobufjs";

/**
 * The long connection's wire unit: one `pbbp2.Frame` protobuf per binary WebSocket message, no length prefix
 * (docs/long-connection.md §Frames). The schema is declared here from the field list (proto2, all four
 * numbers required), and encoded with protobufjs, the library the SDK itself decodes with.
 */

const root = protobuf.Root.fromJSON({
  nested: {
    pbbp2: {
      nested: {
        Header: {
          fields: {
            key: { rule: "required", type: "string", id: 1 },
            value: { rule: "required", type: "string", id: 2 },
          },
        },
        Frame: {
          fields: {
            SeqID: { rule: "required", type: "uint64", id: 1 },
            LogID: { rule: "required", type: "uint64", id: 2 },
            service: { rule: "required", type: "int32", id: 3 },
            method: { rule: "required", type: "int32", id: 4 },
            headers: { rule: "repeated", type: "Header", id: 5 },
            payloadEncoding: { type: "string", id: 6 },
            payloadType: { type: "string", id: 7 },
            payload: { type: "bytes", id: 8 },
            LogIDNew: { type: "string", id: 9 },
          },
        },
      },
    },
  },
});
const FrameType = root.lookupType("pbbp2.Frame");

/** `method`: control frames (ping/pong) and data frames (events, callbacks, acks). */
export const METHOD = { control: 0, data: 1 } as const;

export interface Frame {
  SeqID: number;
  LogID: number;
  service: number;
  method: number;
  headers: Record<string, string>;
  payload?: Uint8Array;
}

export function encodeFrame(frame: Frame): Uint8Array {
  const message = FrameType.fromObject({
    SeqID: frame.SeqID,
    LogID: frame.LogID,
    service: frame.service,
    method: frame.method,
    headers: Object.entries(frame.headers).map(([key, value]) => ({ key, value })),
    ...(frame.payload ? { payload: frame.payload } : {}),
  });
  return FrameType.encode(message).finish();
}

/** Throws on bytes that are not a complete Frame (protobufjs checks the required fields). */
export function decodeFrame(bytes: Uint8Array): Frame {
  const plain = FrameType.toObject(FrameType.decode(bytes), { longs: Number, bytes: Buffer });
  const headers: Record<string, string> = {};
  const list: unknown = plain.headers;
  if (Array.isArray(list)) {
    for (const item of list) {
      if (typeof item?.key === "string" && typeof item.value === "string") headers[item.key] = item.value;
    }
  }
  const payload: unknown = plain.payload;
  return {
    SeqID: Number(plain.SeqID),
    LogID: Number(plain.LogID),
    service: Number(plain.service),
    method: Number(plain.method),
    headers,
    ...(payload instanceof Uint8Array ? { payload } : {}),
  };
}
