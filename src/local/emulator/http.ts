import type { NextFunction, Request, Response } from "express";
import type { z } from "zod";
import type { EmulatorContext } from "./context.ts";
import { CODES, FeishuError, fail } from "./errors.ts";

/** What the call recorder learns while a request is handled. */
interface CallLocals {
  code?: number;
  messageId?: string;
  body?: unknown;
  /** The app the call is served as (its token's, or the credentials it sent): apps.ts. */
  app?: EmulatorContext;
}

export const callLocals = (res: Response): CallLocals => res.locals as CallLocals;

export function sendJson(
  res: Response,
  status: number,
  body: { code: number } & Record<string, unknown>,
  headers: Record<string, string> = {},
): void {
  callLocals(res).code = body.code;
  callLocals(res).body = body;
  res.status(status).set(headers).json(body);
}

/** The platform's success envelope. */
export function ok(res: Response, data: unknown): void {
  sendJson(res, 200, { code: CODES.ok, msg: "success", data });
}

export function sendError(res: Response, error: FeishuError): void {
  sendJson(res, error.httpStatus, { code: error.code, msg: error.message }, error.headers);
}

/** Validates a request part; failures become the platform's "field validation failed". */
export function parse<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const result = schema.safeParse(value ?? {});
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue ? issue.path.map(String).join(".") || "body" : "body";
  throw fail(CODES.fieldValidation, `field validation failed: ${where}: ${issue?.message ?? "invalid"}`);
}

/** Records every call, including failed and faulted ones, once its response is done. */
export function recordCalls(ctx: EmulatorContext) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const at = ctx.clock.now();
    const started = performance.now();
    const { method, path } = req;
    const query = Object.fromEntries(new URLSearchParams(req.originalUrl.split("?")[1] ?? ""));
    res.once("close", () => {
      const locals = callLocals(res);
      // express.json() further down has parsed the body by now (an unparsed request leaves it undefined).
      const body: unknown = req.body;
      ctx.observer.record({
        at,
        method,
        path,
        query,
        status: res.statusCode,
        code: locals.code,
        ...(locals.messageId ? { messageId: locals.messageId } : {}),
        durationMs: performance.now() - started,
        ...(locals.app ? { appId: locals.app.config.appId } : {}),
        requestHeaders: pickHeaders(req),
        ...(body !== undefined ? { requestBody: body } : {}),
        ...(locals.body !== undefined ? { responseBody: locals.body } : {}),
      });
    });
    next();
  };
}

/** The headers worth showing next to a call: who it claims to be and what it sends. */
function pickHeaders(req: Request): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ["authorization", "content-type", "user-agent"]) {
    const value = req.get(name);
    if (value !== undefined) headers[name] = value;
  }
  return headers;
}

/**
 * Injected faults run before anything else: they either answer the call or delay it. With `afterBody`,
 * only faults that match on the body run (mounted after the body parser).
 */
export function applyFaults(ctx: EmulatorContext, options: { afterBody?: boolean } = {}) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    const fault = ctx.faults.take(req.method, req.path, options.afterBody ? bodyText(req.body) : undefined);
    if (!fault) return next();
    if ("delayMs" in fault) {
      await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      return next();
    }
    const msg = fault.msg ?? "injected fault";
    if (fault.code === undefined) {
      callLocals(res).body = msg;
      // Gateway-style failure: no Feishu envelope, just text.
      res
        .status(fault.httpStatus)
        .set(fault.headers ?? {})
        .type("text/plain")
        .send(msg);
      return;
    }
    sendJson(res, fault.httpStatus, { code: fault.code, msg }, fault.headers);
  };
}

/** The body as text for `bodyIncludes`: its JSON, plus a `content` string (a card's JSON) as it was sent. */
function bodyText(body: unknown): string {
  if (typeof body !== "object" || body === null) return "";
  const content = "content" in body && typeof body.content === "string" ? body.content : "";
  return `${JSON.stringify(body)}\n${content}`;
}

/**
 * Every endpoint but the token endpoint needs `Authorization: Bearer <live tenant token>`; the call is then served
 * as the app the token was issued to (apps.ts), whatever app the request claims to be elsewhere.
 */
export function requireTenantToken(ctx: EmulatorContext) {
  return (req: Request, res: Response, next: NextFunction): void => {
    const header = req.get("authorization");
    if (!header)
      throw fail(
        CODES.tokenMissing,
        "Missing access token for authorization. Please make a request with token attached.",
      );
    const token = /^Bearer\s+(\S+)$/i.exec(header)?.[1];
    if (!token?.startsWith("t-"))
      throw fail(CODES.tokenMalformed, "Invalid access token for authorization: malformed token.");
    const app = ctx.apps.byToken(token, ctx.clock.now());
    if (!app)
      throw fail(
        CODES.tokenInvalid,
        "Invalid access token for authorization. Please make a request with token attached.",
      );
    callLocals(res).app = app;
    next();
  };
}

/** The app-wide sliding-window limit (HTTP 429 with `x-ogw-ratelimit-reset`, §3.3). */
export function appRateLimit(ctx: EmulatorContext) {
  return (_req: Request, _res: Response, next: NextFunction): void => {
    const taken = ctx.appWindow.tryTake(ctx.clock.now());
    if (!taken.ok) {
      throw new FeishuError(CODES.rateLimited, "request trigger frequency limit", {
        httpStatus: 429,
        headers: {
          "x-ogw-ratelimit-limit": String(ctx.appWindow.limit),
          "x-ogw-ratelimit-reset": String(Math.max(1, Math.ceil(taken.retryAfterMs / 1000))),
        },
      });
    }
    next();
  };
}

/** Turns thrown errors into platform-shaped responses. */
/** The context of the app a call is served as (set by requireTenantToken; the first app before it). */
export function appOf(ctx: EmulatorContext, res: Response): EmulatorContext {
  return callLocals(res).app ?? ctx;
}

export function errorHandler(error: unknown, _req: Request, res: Response, _next: NextFunction): void {
  if (error instanceof FeishuError) return sendError(res, error);
  const type = (error as { type?: unknown }).type;
  if (type === "entity.parse.failed")
    return sendJson(res, 400, {
      code: CODES.fieldValidation,
      msg: "field validation failed: body is not JSON",
    });
  if (type === "entity.too.large")
    return sendJson(res, 413, { code: CODES.contentTooLong, msg: "request body too large" });
  const message = error instanceof Error ? error.message : String(error);
  sendJson(res, 500, { code: 1, msg: `emulator internal error: ${message}` });
}
