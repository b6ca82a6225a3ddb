import { randomBytes } from "node:crypto";

const hex = (bytes: number): string => randomBytes(bytes).toString("hex");

/** Identifier shapes as the platform prints them (om_ message, omt_ thread, t- token, c- update token). */
export const newId = {
  message: () => `om_${hex(16)}`,
  thread: () => `omt_${hex(8)}`,
  event: () => hex(16),
  tenantToken: () => `t-${hex(20)}`,
  updateToken: () => `c-${hex(20)}`,
  nonce: () => hex(8),
};

/** The chat a bot ends up in when it messages a user directly. */
export const p2pChatId = (userId: string): string => `oc_p2p_${userId}`;

/** A stable union_id for an open_id, so repeated events agree with each other. */
export const unionIdFor = (openId: string): string => `on_${openId.replace(/^ou_/, "")}`;
