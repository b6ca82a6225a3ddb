import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

/**
 * Webhook crypto as the platform does it (feishu-platform §2.5). Pure helpers, also meant for tests of
 * the bot's own webhook.
 */

const keyFor = (encryptKey: string): Buffer => createHash("sha256").update(encryptKey).digest();

/** The value of `{"encrypt": …}`: base64(iv16 ‖ AES-256-CBC(PKCS#7, key = sha256(encryptKey))). */
export function encryptBody(encryptKey: string, json: string | object): string {
  const plain = typeof json === "string" ? json : JSON.stringify(json);
  const iv = randomBytes(16);
  const cipher = createCipheriv("aes-256-cbc", keyFor(encryptKey), iv);
  return Buffer.concat([iv, cipher.update(plain, "utf8"), cipher.final()]).toString("base64");
}

/** The inverse of `encryptBody`: the JSON text inside an `encrypt` value. */
export function decryptBody(encryptKey: string, encrypt: string): string {
  const bytes = Buffer.from(encrypt, "base64");
  if (bytes.length < 32) throw new Error("encrypted body too short");
  const decipher = createDecipheriv("aes-256-cbc", keyFor(encryptKey), bytes.subarray(0, 16));
  return Buffer.concat([decipher.update(bytes.subarray(16)), decipher.final()]).toString("utf8");
}

/** `X-Lark-Signature`: hex sha256(timestamp + nonce + encryptKey + rawBody). */
export function signBody(encryptKey: string, timestamp: string, nonce: string, rawBody: string): string {
  return createHash("sha256")
    .update(timestamp + nonce + encryptKey + rawBody)
    .digest("hex");
}

export interface UrlVerification {
  challenge: string;
  token: string;
  type: "url_verification";
}

/** The request URL check the console sends when a webhook address is saved. */
export function urlVerification(challenge: string, token = ""): UrlVerification {
  return { challenge, token, type: "url_verification" };
}
