/**
 * Feishu error codes the emulator answers with (feishu-platform §3.3, §2.4, §3.4). Business errors travel
 * as HTTP 400 with `{code, msg}`; rate limits as HTTP 429.
 */
export const CODES = {
  ok: 0,
  invalidParam: 10003,
  appSecretInvalid: 10014,
  rateLimited: 99991400,
  tokenMissing: 99991661,
  tokenInvalid: 99991663,
  tokenMalformed: 99991671,
  /** The app lacks every scope that grants the call (scopes.ts). */
  scopeMissing: 99991672,
  fieldValidation: 99992402,
  messageInvalid: 230001,
  messageRecalled: 230011,
  imRateLimited: 230020,
  contentTooLong: 230025,
  /** The tenant's data-loss-prevention audit refused the content (dlp.ts). */
  auditFailed: 230028,
  messageTooOld: 230031,
  receiveIdInvalid: 230034,
  cardContentFailed: 230099,
  cardParseError: 200621,
  /** `ephemeral/v1/send` outside a normal group: a field report's code (feishu-platform §5.1; the docs name none). */
  ephemeralNotGroup: 18053,
  updateTokenBadFormat: 300020,
  updateTokenExpired: 300030,
  updateTokenUsedUp: 300040,
  updateMessageRecalled: 200000,
  /**
   * 获取单个用户信息 for someone outside the app's contact scope (通讯录权限范围), or nobody: the emulator's
   * one answer for "no name for you" (the docs list 41050 "no user authority"; which code an unknown open_id
   * gets is not documented).
   */
  contactNoAuthority: 41050,
  /** Client-side errors of a callback response (§2.3): a bad card, a 1.0 card answering a 2.0 card. */
  callbackCardInvalid: 200673,
  callbackCardVersion: 200830,
} as const;

/** Thrown by handlers; the server turns it into the platform's error response. */
export class FeishuError extends Error {
  readonly httpStatus: number;
  readonly code: number;
  readonly headers: Record<string, string>;

  constructor(
    code: number,
    msg: string,
    options: { httpStatus?: number; headers?: Record<string, string> } = {},
  ) {
    super(msg);
    this.name = "FeishuError";
    this.code = code;
    this.httpStatus = options.httpStatus ?? 400;
    this.headers = options.headers ?? {};
  }
}

export const fail = (code: number, msg: string, httpStatus = 400): FeishuError =>
  new FeishuError(code, msg, { httpStatus });

/**
 * 230099's message carries the card sub-code the way the platform does (`ext=ErrCode: …`): 200621 by
 * default, 200570 for an image key, 200861 for a 1.0-only tag.
 */
export function cardContentError(problem: string, subCode: number = CODES.cardParseError): FeishuError {
  return fail(
    CODES.cardContentFailed,
    `Failed to create card content, ext=ErrCode: ${subCode}; ErrMsg: ${problem}`,
  );
}
