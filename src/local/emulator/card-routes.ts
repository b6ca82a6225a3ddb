import type { Router } from "express";
import { z } from "zod";
import { checkCardContent } from "./content.ts";
import type { EmulatorContext } from "./context.ts";
import { CODES, fail } from "./errors.ts";
import { callLocals, ok, parse } from "./http.ts";

const updateBody = z.object({
  token: z.string().min(1),
  card: z.record(z.string(), z.unknown()),
});

/**
 * `POST /open-apis/interactive/v1/card/update` (§2.4): the delayed update with a callback's `c-…` token.
 * Valid 30 min, at most 2 uses; a rejected card does not use the token up. An applied update counts as
 * a patch of the message and takes a slot in its per-message window, but is not refused by that window.
 */
export function mountCardRoutes(router: Router, ctx: EmulatorContext): void {
  router.post("/open-apis/interactive/v1/card/update", (req, res) => {
    const body = parse(updateBody, req.body);
    const now = ctx.clock.now();
    const messageId = ctx.updateTokens.check(body.token, now);
    callLocals(res).messageId = messageId;
    const message = ctx.messages.require(messageId);
    if (message.recalled) throw fail(CODES.updateMessageRecalled, "the message was recalled");
    const content = JSON.stringify(body.card);
    checkCardContent(content, { update: true });
    ctx.updateTokens.consume(body.token);
    ctx.patchWindows.for(messageId).record(now);
    const updated = ctx.messages.applyUpdate(messageId, content, now, { via: "card_update" });
    ctx.observer.emit("message_patched", { message: updated, via: "card_update" });
    ok(res, {});
  });
}
