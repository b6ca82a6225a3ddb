import { describe, expectTypeOf, it } from "vitest";
import type * as ConsolePage from "../src/local/console/public/types.ts";
import type { ConsoleChat, LocalUser } from "../src/local/console/users.ts";
import type { ConsoleEvent, ConsoleMessage, LogEntry } from "../src/local/console/view.ts";
import type * as SessionPage from "../src/web/public/wire.ts";
import type { ServerFrame, SessionSnapshot } from "../src/ws/protocol.ts";

/**
 * The pages cannot import the server's types (those modules pull in Node code), so each page declares what
 * it reads (console/public/types.ts, web/public/wire.ts). These checks run in `tsc` (npm run typecheck): a
 * change on the server that a page's declaration no longer fits fails the build, here.
 */
describe("what the pages read is what the server sends", () => {
  it("the console's messages, chats, users and log entries", () => {
    expectTypeOf<ConsoleMessage>().toExtend<ConsolePage.ConsoleMessage>();
    expectTypeOf<ConsoleChat>().toExtend<ConsolePage.ConsoleChat>();
    expectTypeOf<LocalUser>().toExtend<ConsolePage.LocalUser>();
    expectTypeOf<LogEntry>().toExtend<ConsolePage.LogEntry>();
    expectTypeOf<ConsoleEvent>().toExtend<ConsolePage.ConsoleEvent>();
  });

  it("the session page's frames and snapshot", () => {
    expectTypeOf<SessionSnapshot>().toExtend<SessionPage.PageSnapshot>();
    expectTypeOf<ServerFrame>().toExtend<SessionPage.PageFrame>();
  });
});
