import express, {
  type Express,
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
} from "express";
import type { z } from "zod";
import { formatIssues } from "../asks/schema.ts";
import { AppError } from "../errors.ts";
import { agentOf, requireAgent } from "./auth.ts";
import { agentRequestRate } from "./request-rate.ts";
import {
  askUserQuestionsInput,
  DEFAULT_WAIT_S,
  finishTaskInput,
  MAX_WAIT_S,
  reportProgressInput,
  startTaskInput,
} from "./schemas.ts";
import type { AgentTasks } from "./service.ts";
import type { AgentTokenRevocations } from "./token.ts";

/**
 * The same operations for agents that do not speak MCP: `POST /api/tasks`, `POST /api/tasks/:id/steps`,
 * `POST /api/tasks/:id/finish`, `POST /api/asks`, `GET /api/asks/:id?wait=50` (long-poll),
 * `DELETE /api/asks/:id`. Same tokens; bodies checked with the tools' zod schemas; errors as
 * `{error:{code,message}}` (the app's error middleware).
 */

export function mountAgentHttpApi(
  app: Express,
  deps: {
    tasks: AgentTasks;
    authSecret: string;
    now: () => number;
    maxBodyBytes?: number;
    /** Requests per token, shared with /mcp (request-rate.ts); absent: a limiter of its own. */
    requestRate?: RequestHandler;
    revocations?: AgentTokenRevocations;
  },
): void {
  const router = express.Router();
  // Only /api/tasks and /api/asks are the agents' API; /api/sessions stays the session pages' (user tokens):
  // anything else leaves this router before the agent token is asked for.
  router.use((req, _res, next) => next(/^\/(tasks|asks)(\/|$)/.test(req.path) ? undefined : "router"));
  router.use(
    requireAgent(deps.authSecret, deps.now, deps.revocations),
    deps.requestRate ?? agentRequestRate(deps.now),
    express.json({ limit: deps.maxBodyBytes ?? 256 * 1024 }),
  );
  const { tasks } = deps;
  router.post("/tasks", async (req, res) => {
    res.status(201).json(await tasks.startTask(agentOf(req), parse(startTaskInput, req.body)));
  });
  router.post("/tasks/:id/steps", async (req, res) => {
    const body = parse(reportProgressInput.omit({ task_id: true }), req.body);
    res.json(await tasks.reportProgress(agentOf(req), { ...body, task_id: String(req.params.id) }));
  });
  router.post("/tasks/:id/finish", async (req, res) => {
    const body = parse(finishTaskInput.omit({ task_id: true }), req.body);
    res.json(await tasks.finishTask(agentOf(req), { ...body, task_id: String(req.params.id) }));
  });
  router.post("/asks", async (req, res) => {
    const who = agentOf(req);
    const input = parse(askUserQuestionsInput, req.body);
    // Default: answer at once with the ask id; wait_s makes it wait like the MCP tool does.
    res
      .status(201)
      .json(await tasks.askAndWait(who, input, { waitMs: (input.wait_s ?? 0) * 1000, signal: gone(res) }));
  });
  router.get("/asks/:id", async (req, res) => {
    const wait = req.query.wait === undefined ? 0 : Number(req.query.wait);
    if (!(Number.isFinite(wait) && wait >= 0 && wait <= MAX_WAIT_S))
      throw new AppError(
        "INVALID_INPUT",
        `wait: seconds from 0 to ${MAX_WAIT_S} (default 0; ${DEFAULT_WAIT_S} is a good value)`,
      );
    res.json(
      await tasks.wait(agentOf(req), String(req.params.id), { waitMs: wait * 1000, signal: gone(res) }),
    );
  });
  router.delete("/asks/:id", async (req, res) => {
    res.json(await tasks.cancelQuestion(agentOf(req), String(req.params.id)));
  });
  router.use((error: unknown, _req: Request, res: Response, next: NextFunction) =>
    bodyErrors(error, res, next),
  );
  app.use("/api", router);
}

/** Body-parser failures as the API's own errors: too large is 413, not JSON is 400, never a 500. */
export function bodyErrors(error: unknown, _res: Response, next: NextFunction): void {
  const type = typeof error === "object" && error !== null && "type" in error ? error.type : undefined;
  if (type === "entity.too.large")
    return next(new AppError("TOO_LARGE", "request body too large", { cause: error }));
  if (type === "entity.parse.failed")
    return next(new AppError("INVALID_INPUT", "request body is not valid JSON", { cause: error }));
  next(error);
}

function parse<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const parsed = schema.safeParse(body ?? {});
  if (!parsed.success) throw new AppError("INVALID_INPUT", formatIssues(parsed.error.issues));
  return parsed.data;
}

/** Aborts when the client hangs up, so a long-poll stops waiting (the ask itself stays open). */
function gone(res: Response): AbortSignal {
  const controller = new AbortController();
  // The response's close: the request's fires once its body is read, not when the client leaves.
  res.on("close", () => controller.abort());
  return controller.signal;
}
