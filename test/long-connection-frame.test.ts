import { describe, expect, it } from "vitest";
import { decodeFrame, encodeFrame, METHOD } from "../src/local/emulator/index.ts";

/** The pbbp2 Frame codec of the emulator, against bytes captured from the platform (feishu-platform Addendum §2.2). */

describe("pbbp2 frames", () => {
  it("encodes a client ping byte for byte as the documented example", () => {
    const bytes = encodeFrame({
      SeqID: 0,
      LogID: 0,
      service: 33554678,
      method: METHOD.control,
      headers: { type: "ping" },
    });
    expect(Buffer.from(bytes).toString("hex")).toBe("0800100018f681801020002a0c0a0474797065120470696e67");
  });

  it("round-trips a data frame with every header and a binary payload", () => {
    const payload = new TextEncoder().encode(JSON.stringify({ schema: "2.0", text: "你好" }));
    const frame = {
      SeqID: 12,
      LogID: 987654321,
      service: 33554678,
      method: METHOD.data,
      headers: { type: "event", message_id: "m1", sum: "1", seq: "0", trace_id: "t1" },
      payload,
    };
    const decoded = decodeFrame(encodeFrame(frame));
    expect({ ...decoded, payload: Buffer.from(decoded.payload ?? []).toString("utf8") }).toEqual({
      ...frame,
      payload: Buffer.from(payload).toString("utf8"),
    });
  });

  it("refuses bytes that miss a required field or are not a frame at all", () => {
    // SeqID and LogID only: service and method (required) are missing.
    expect(() => decodeFrame(new Uint8Array([0x08, 0x01, 0x10, 0x01]))).toThrow(/service|method|required/);
    expect(() => decodeFrame(new Uint8Array([0xff, 0xff, 0xff]))).toThrow();
  });
});
