import type { NextFunction, Request, Response } from "express";
import type { z } from "zod";
import { AppError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";

/** Parses a request part once, at the edge; a failure is a 400 that names every bad field. */
export function parseInput<S extends z.ZodType>(schema: S, value: unknown, where: string): z.infer<S> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.map(String).join(".");
    return `${path ? `${where}.${path}` : where}: ${issue.message}`;
  });
  throw new AppError("INVALID_INPUT", problems.join("; "));
}

/** The console API's own error answer, so it never depends on the host app's middleware. */
export function apiErrors(logger: Logger) {
  return (error: unknown, req: Request, res: Response, _next: NextFunction): void => {
    const appError =
      error instanceof AppError
        ? error
        : bodyErrorType(error) === "entity.parse.failed"
          ? new AppError("INVALID_INPUT", "Request body is not valid JSON")
          : bodyErrorType(error) === "entity.too.large"
            ? new AppError("INVALID_INPUT", "Request body is too large", { status: 413 })
            : new AppError("INTERNAL", "Internal error", { cause: error });
    if (appError.status >= 500) logger.error({ err: error, path: req.path }, "console request failed");
    if (res.headersSent) return;
    res.status(appError.status).json({ error: { code: appError.code, message: appError.message } });
  };
}

/** body-parser marks its errors with a `type`. */
function bodyErrorType(error: unknown): unknown {
  return typeof error === "object" && error !== null ? (error as { type?: unknown }).type : undefined;
}
