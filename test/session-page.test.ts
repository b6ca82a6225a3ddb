import fs from "node:fs";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createApp } from "../src/app.ts";
import { checkAnswers } from "../src/asks/answers.ts";
import type { AskQuestion } from "../src/asks/schema.ts";
import { signLinkToken, signToken, verifyToken } from "../src/auth/token.ts";
import { type Core, createCore } from "../src/core.ts";
import { VIEW_MEMBERSHIP_MS } from "../src/domain/access.ts";
import { createLogger } from "../src/logger.ts";
import { type Db, openDatabase } from "../src/store/db.ts";
import { type LocalUser, safeNext } from "../src/web/auth.ts";
import { readCookie, SESSION_COOKIE } from "../src/web/cookie.ts";
import {
  canSubmit,
  collectAnswers,
  emptyState,
  hasPreview,
  type PanelQuestion,
  previewFor,
  type QuestionState,
  selectOption,
  typeOther,
  unfence,
} from "../src/web/public/question-panel.ts";
import { mountSessionPages } from "../src/web/session-page.ts";
import { sampleAsk } from "./fixtures.ts";
import {
  createScriptedAskAgent,
  createSession,
  DEFAULT_ASK,
  type ScriptedAskAgent,
  startRun,
  TestClient,
  waitForRun,
} from "./helpers/harness.ts";

const ALICE = "ou_alice";
const BOB = "ou_bob";
const CAROL = "ou_carol";
const LOCAL_USERS: LocalUser[] = [
  { openId: ALICE, name: "Alice" },
  { openId: BOB, name: "Bob" },
];
const HOUR_MS = 60 * 60 * 1000;

interface PageServer {
  base: string;
  port: number;
  core: Core;
  agent: ScriptedAskAgent;
  secret: string;
  /** The clock the pages read; tokens for the pages are signed against it. */
  now: number;
  tokenFor(userId: string, ttlMs?: number): string;
  /** Opens a WebSocket with the given headers (and nothing in the URL); resolves once open. */
  connect(headers: Record<string, string>): Promise<TestClient>;
  /** Tries an upgrade that must be refused; resolves with the HTTP status. */
  refusedStatus(headers: Record<string, string>): Promise<number>;
  stop(): Promise<void>;
}

const servers: PageServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
});

/** The real core and app on 127.0.0.1:0, with the session pages mounted through `createApp({routes})`. */
async function startPageServer(
  options: { localUsers?: LocalUser[]; coreNow?: () => number } = {},
): Promise<PageServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "fpb-page-"));
  const db: Db = openDatabase(path.join(dir, "bot.sqlite"));
  const logger = createLogger({ level: "silent" });
  const secret = `page-secret-${path.basename(dir)}`;
  const agent = createScriptedAskAgent();
  const core = await createCore({
    db,
    logger,
    agent,
    tools: [],
    askTimeoutMs: 60_000,
    authSecret: secret,
    ...(options.coreNow ? { now: options.coreNow } : {}),
  });
  const clock = Date.now();
  const { server } = createApp({
    ...core,
    logger,
    routes: [
      (app) =>
        mountSessionPages(app, {
          runs: core.runs,
          authSecret: secret,
          now: () => clock,
          logger,
          ...(options.localUsers ? { localUsers: options.localUsers } : {}),
        }),
    ],
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const sockets = new Set<WebSocket>();
  const open = (headers: Record<string, string>) => {
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`, { headers });
    sockets.add(ws);
    ws.once("close", () => sockets.delete(ws));
    return ws;
  };
  const page: PageServer = {
    base: `http://127.0.0.1:${port}`,
    port,
    core,
    agent,
    secret,
    now: clock,
    tokenFor: (userId, ttlMs = HOUR_MS) => signToken(secret, userId, clock + ttlMs),
    async connect(headers) {
      const ws = open(headers);
      const client = new TestClient(ws);
      await new Promise<void>((resolve, reject) => {
        ws.once("open", () => resolve());
        ws.once("unexpected-response", (_req, res) =>
          reject(new Error(`upgrade refused with HTTP ${res.statusCode}`)),
        );
        ws.once("error", reject);
      });
      return client;
    },
    refusedStatus(headers) {
      const ws = open(headers);
      return new Promise<number>((resolve, reject) => {
        ws.once("open", () => {
          ws.terminate();
          reject(new Error("the upgrade was accepted"));
        });
        ws.once("unexpected-response", (req, res) => {
          res.resume();
          req.destroy();
          resolve(res.statusCode ?? 0);
        });
        ws.on("error", () => undefined);
      });
    },
    async stop() {
      for (const ws of sockets) ws.terminate();
      await core.runner.stop();
      await core.hub.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  servers.push(page);
  return page;
}

function get(server: PageServer, url: string, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${server.base}${url}`, { headers, redirect: "manual" });
}

/** The `fpb_session` Set-Cookie header of a response, split into its value and attributes. */
function sessionSetCookie(response: Response): { value: string; attributes: Map<string, string> } | null {
  const header = response.headers.getSetCookie().find((line) => line.startsWith(`${SESSION_COOKIE}=`));
  if (!header) return null;
  const [pair = "", ...rest] = header.split(";").map((part) => part.trim());
  const attributes = new Map(
    rest.map((part) => {
      const [name = "", value = ""] = part.split("=");
      return [name.toLowerCase(), value] as const;
    }),
  );
  return { value: pair.slice(SESSION_COOKIE.length + 1), attributes };
}

const cookieFor = (token: string) => `${SESSION_COOKIE}=${token}`;

describe("the session page and its assets", () => {
  it("serves the same static page for any session id, with a strict CSP and no session content", async () => {
    const server = await startPageServer();
    const session = await createSession(server.core, ALICE, { title: "Secret roadmap" });
    const signedOut = await get(server, `/sessions/${encodeURIComponent(session.id)}`);
    const other = await get(server, "/sessions/does-not-exist");

    expect(signedOut.status).toBe(200);
    expect(signedOut.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(signedOut.headers.get("x-content-type-options")).toBe("nosniff");
    const csp = signedOut.headers.get("content-security-policy") ?? "";
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    const html = await signedOut.text();
    expect(html).toBe(await other.text());
    expect(html).not.toContain("Secret roadmap");
    expect(html).not.toContain(session.id);
  });

  it("serves the page's script (its TypeScript bundled) and the stylesheet, and nothing else from public/", async () => {
    const server = await startPageServer();
    const expected = {
      "/web/session.js": "text/javascript; charset=utf-8",
      "/web/session.css": "text/css; charset=utf-8",
    };
    for (const [url, type] of Object.entries(expected)) {
      const response = await get(server, url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get("content-type"), url).toBe(type);
      expect((await response.text()).length, url).toBeGreaterThan(100);
    }
    const script = await (await get(server, "/web/session.js")).text();
    // Plain JavaScript (types gone) that carries what it imports: the panel, the server's answer rule and
    // the console's markdown renderer (markdown-it inside).
    expect(script).not.toMatch(/^import\b|\binterface PanelQuestion\b|: PanelQuestion\b/m);
    for (const name of ["createAskPanel", "normalizeAnswer", "markdownToHtml", "MarkdownIt"])
      expect(script, name).toContain(name);
    const sources = [
      "question-panel.ts",
      "question-panel.js",
      "ask-panel.js",
      "markdown.js",
      "markdown-it.js",
      "session.html",
      "..%2Fsession-page.ts",
    ];
    for (const file of sources) expect((await get(server, `/web/${file}`)).status, file).toBe(404);
  });

  it("references only local assets: every src/href is a same-site path that is served, imports are relative", async () => {
    const server = await startPageServer();
    const html = await (await get(server, "/sessions/x")).text();
    const refs = [...html.matchAll(/\b(?:src|href)="([^"]*)"/g)].map((match) => match[1] ?? "");
    expect(refs).toEqual(expect.arrayContaining(["/web/session.css", "/web/session.js"]));
    for (const ref of refs) {
      if (ref === "data:,") continue; // the empty favicon, so the browser does not ask for one
      expect(ref, ref).toMatch(/^\/(?!\/)/);
      expect((await get(server, ref)).status, ref).toBe(200);
    }
    for (const file of ["session.js", "session.css"]) {
      // A bundled library's licence banner may name its homepage; it loads nothing from there.
      const text = (await (await get(server, `/web/${file}`)).text()).replace(/\/\*![\s\S]*?\*\//g, "");
      const fetchable = text.replaceAll('"http://www.w3.org/2000/svg"', '""');
      expect(fetchable, `${file} names no other origin`).not.toMatch(/https?:\/\/[a-z0-9]/i);
      if (file.endsWith(".css")) expect(text, file).not.toMatch(/@import|\burl\(/i);
      // One self-contained module: nothing for the browser to import.
      expect(text, file).not.toMatch(/^\s*import\b|\bimport\(\s*["']/m);
    }
    expect(html).not.toMatch(/https?:\/\//);
  });
});

describe("sign-in", () => {
  describe("GET /auth/link (the personal link)", () => {
    it("sets an HttpOnly, SameSite=Lax cookie for the token's lifetime and redirects to next", async () => {
      const server = await startPageServer();
      const token = server.tokenFor(ALICE, 2 * HOUR_MS);
      const response = await get(
        server,
        `/auth/link?token=${encodeURIComponent(token)}&next=${encodeURIComponent("/sessions/web-1?x=1")}`,
      );
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toBe("/sessions/web-1?x=1");
      expect(response.headers.get("cache-control")).toBe("no-store");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      const cookie = sessionSetCookie(response);
      // A token of its own for the browser, for the link's remaining lifetime (under the 12-hour sign-in cap).
      expect(verifyToken(server.secret, cookie?.value ?? "", server.now)).toMatchObject({
        ok: true,
        userId: ALICE,
        expiresAt: server.now + 2 * HOUR_MS,
      });
      expect(cookie?.attributes.get("path")).toBe("/");
      expect(cookie?.attributes.get("max-age")).toBe(String((2 * HOUR_MS) / 1000));
      expect(cookie?.attributes.has("httponly")).toBe(true);
      expect(cookie?.attributes.get("samesite")).toBe("Lax");
      expect(cookie?.attributes.has("secure")).toBe(false);
    });

    it("marks the cookie Secure when the request came over https (through a proxy)", async () => {
      const server = await startPageServer();
      const token = server.tokenFor(ALICE);
      const response = await get(server, `/auth/link?token=${token}&next=/`, {
        "x-forwarded-proto": "https",
      });
      expect(sessionSetCookie(response)?.attributes.has("secure")).toBe(true);
    });

    it("refuses a missing, forged, malformed or expired token with a 401 page and no cookie", async () => {
      const server = await startPageServer();
      const forged = signToken("another-secret", ALICE, server.now + HOUR_MS);
      const expired = server.tokenFor(ALICE, -1);
      const cases: [string, string][] = [
        ["", "登录链接无效"],
        [`?token=${forged}`, "登录链接无效"],
        ["?token=not-a-token", "登录链接无效"],
        [`?token=${expired}`, "登录链接已过期"],
      ];
      for (const [query, title] of cases) {
        const url = query ? `/auth/link${query}&next=/sessions/x` : "/auth/link?next=/sessions/x";
        const response = await get(server, url);
        expect(response.status, query).toBe(401);
        expect(response.headers.get("content-type"), query).toMatch(/^text\/html/);
        expect(await response.text(), query).toContain(title);
        expect(sessionSetCookie(response), query).toBeNull();
      }
    });

    it("opens once: the same link a second time is refused with a page saying so, and sets no cookie", async () => {
      const server = await startPageServer();
      const link = signLinkToken(server.secret, ALICE, server.now + HOUR_MS, server.now);
      expect((await get(server, `/auth/link?token=${link}&next=/`)).status).toBe(303);
      const again = await get(server, `/auth/link?token=${link}&next=/`);
      expect(again.status).toBe(401);
      expect(await again.text()).toContain("登录链接已使用过");
      expect(sessionSetCookie(again)).toBeNull();
      // A plain token (older links) is spent the same way; and a link token is no cookie.
      const plain = server.tokenFor(ALICE);
      expect((await get(server, `/auth/link?token=${plain}`)).status).toBe(303);
      expect((await get(server, `/auth/link?token=${plain}`)).status).toBe(401);
      const me = await get(server, "/auth/me", { cookie: `${SESSION_COOKIE}=${link}` });
      expect(me.status).toBe(401);
    });

    it("never redirects off the site: absolute, protocol-relative and backslash targets go to /", async () => {
      const server = await startPageServer();
      // A link opens once: a fresh one per try.
      const fresh = () => signLinkToken(server.secret, ALICE, server.now + HOUR_MS, server.now);
      for (const next of [
        "//evil.com",
        "https://evil.com",
        "/\\evil.com",
        "\\\\evil.com",
        "javascript:alert(1)",
        "evil.com",
        "/\r\nSet-Cookie: x=1",
      ]) {
        const response = await get(server, `/auth/link?token=${fresh()}&next=${encodeURIComponent(next)}`);
        expect(response.status, next).toBe(303);
        expect(response.headers.get("location"), next).toBe("/");
      }
      expect((await get(server, `/auth/link?token=${fresh()}`)).headers.get("location")).toBe("/");
      // Percent signs are just characters of a path here.
      const escaped = await get(
        server,
        `/auth/link?token=${fresh()}&next=${encodeURIComponent("/a%0d%0ab")}`,
      );
      expect(escaped.headers.get("location")).toBe("/a%0d%0ab");
    });
  });

  describe("safeNext", () => {
    it("keeps same-site paths and turns everything else into /", () => {
      expect(safeNext("/sessions/a%2Fb?x=1#top")).toBe("/sessions/a%2Fb?x=1#top");
      expect(safeNext("/")).toBe("/");
      for (const bad of [undefined, "", "//evil.com", "///evil.com", "/\\evil.com", "https://evil.com"]) {
        expect(safeNext(bad), String(bad)).toBe("/");
      }
      expect(safeNext("/a\nb")).toBe("/");
      expect(safeNext(`/${"a".repeat(3000)}`)).toBe("/");
    });
  });

  describe("GET /auth/local (local mode)", () => {
    it("signs in as one of the local users and redirects to next", async () => {
      const server = await startPageServer({ localUsers: LOCAL_USERS });
      const response = await get(server, `/auth/local?user=${BOB}&next=/sessions/web-9`);
      expect(response.status).toBe(303);
      expect(response.headers.get("location")).toBe("/sessions/web-9");
      const cookie = sessionSetCookie(response);
      expect(cookie?.attributes.has("httponly")).toBe(true);
      const me = await get(server, "/auth/me", { cookie: cookieFor(cookie?.value ?? "") });
      expect(await me.json()).toEqual({ userId: BOB, name: "Bob" });
    });

    it("accepts the names the 400 page lists, in any case, as well as the open_ids", async () => {
      const server = await startPageServer({ localUsers: LOCAL_USERS });
      const listed = await get(server, "/auth/local?user=ou_mallory");
      const page = await listed.text();
      expect(page).toContain("Alice（ou_alice）、Bob（ou_bob）");
      for (const given of ["Alice", "alice", " BOB ", "OU_ALICE", ALICE]) {
        const response = await get(server, `/auth/local?user=${encodeURIComponent(given)}&next=/x`);
        expect(response.status, given).toBe(303);
        const me = await get(server, "/auth/me", {
          cookie: cookieFor(sessionSetCookie(response)?.value ?? ""),
        });
        const expected = given.trim().toLowerCase().includes("bob") ? BOB : ALICE;
        expect(await me.json(), given).toMatchObject({ userId: expected });
      }
    });

    it("answers 400 for a user who is not in the list", async () => {
      const server = await startPageServer({ localUsers: LOCAL_USERS });
      const response = await get(server, "/auth/local?user=ou_mallory&next=/");
      expect(response.status).toBe(400);
      expect(sessionSetCookie(response)).toBeNull();
      expect((await get(server, "/auth/local")).status).toBe(400);
    });

    it("does not exist in feishu mode (no local users)", async () => {
      const server = await startPageServer();
      const response = await get(server, `/auth/local?user=${ALICE}&next=/`);
      expect(response.status).toBe(404);
      expect(sessionSetCookie(response)).toBeNull();
    });
  });

  describe("GET /auth/me and POST /auth/logout", () => {
    it("answers 401 with how to sign in, then the user once the cookie is there", async () => {
      const feishu = await startPageServer();
      const signedOut = await get(feishu, "/auth/me");
      expect(signedOut.status).toBe(401);
      expect(await signedOut.json()).toMatchObject({ signIn: { mode: "feishu" } });

      const local = await startPageServer({ localUsers: LOCAL_USERS });
      expect(await (await get(local, "/auth/me")).json()).toMatchObject({
        signIn: { mode: "local", users: LOCAL_USERS },
      });
      const me = await get(feishu, "/auth/me", { cookie: `a=b; ${cookieFor(feishu.tokenFor(ALICE))}` });
      expect(me.status).toBe(200);
      expect(me.headers.get("cache-control")).toBe("no-store");
      expect(await me.json()).toEqual({ userId: ALICE });
    });

    it("refuses an expired cookie and tells the browser to drop it", async () => {
      const server = await startPageServer();
      const response = await get(server, "/auth/me", { cookie: cookieFor(server.tokenFor(ALICE, -1)) });
      expect(response.status).toBe(401);
      expect(sessionSetCookie(response)?.attributes.get("max-age")).toBe("0");
    });

    it("signs out by clearing the cookie, but not when another site posts the form", async () => {
      const server = await startPageServer();
      const cookie = cookieFor(server.tokenFor(ALICE));
      const out = await fetch(`${server.base}/auth/logout`, { method: "POST", headers: { cookie } });
      expect(out.status).toBe(204);
      const cleared = sessionSetCookie(out);
      expect(cleared?.value).toBe("");
      expect(cleared?.attributes.get("max-age")).toBe("0");
      expect(cleared?.attributes.get("path")).toBe("/");

      const foreign = await fetch(`${server.base}/auth/logout`, {
        method: "POST",
        headers: { cookie, origin: "https://evil.com" },
      });
      expect(foreign.status).toBe(403);
      expect(await foreign.json()).toEqual({
        error: { code: "FORBIDDEN", message: "cross-site sign-out refused" },
      });
      expect(sessionSetCookie(foreign)).toBeNull();
    });
  });
});

describe("GET /api/sessions/:id", () => {
  it("gives the title to someone who may view the session, and the same 403 for unknown and not-yours", async () => {
    const server = await startPageServer();
    const session = await createSession(server.core, ALICE, { title: "飞书私聊" });
    const url = `/api/sessions/${encodeURIComponent(session.id)}`;
    const anonymous = await get(server, url);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get("cache-control")).toBe("no-store");
    expect(await anonymous.json()).toEqual({ error: { code: "UNAUTHORIZED", message: "not signed in" } });
    const own = await get(server, url, { cookie: cookieFor(server.tokenFor(ALICE)) });
    expect(await own.json()).toMatchObject({ id: session.id, title: "飞书私聊" });
    const stranger = await get(server, url, { cookie: cookieFor(server.tokenFor(BOB)) });
    const unknown = await get(server, "/api/sessions/nope", { cookie: cookieFor(server.tokenFor(BOB)) });
    expect([stranger.status, unknown.status]).toEqual([403, 403]);
    expect(stranger.headers.get("cache-control")).toBe("no-store");
    expect(await stranger.json()).toEqual(await unknown.json());
    expect(await (await get(server, url, { cookie: cookieFor(server.tokenFor(BOB)) })).json()).toEqual({
      error: { code: "FORBIDDEN", message: "you may not view this session" },
    });
  });
});

describe("a card's own run: /sessions/:id/runs/:runId and the chat's history", () => {
  it("serves the page, the history to who may view the session, and each run to them and to its own sender", async () => {
    // The runner's clock, apart from the pages' (which sign the tokens): it moves past the membership window.
    let coreClock = Date.now();
    const server = await startPageServer({ coreNow: () => coreClock });
    const session = await createSession(server.core, ALICE, { chatType: "group", title: "飞书群聊" });
    const page = await get(server, `/sessions/${session.id}/runs/anything`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("/web/session.js");

    // Bob's task ends (nobody could be asked), then Alice's waits on her question: an old card and the current one.
    const first = await startRun(server.core, session, BOB, "第一次：部署到测试环境");
    await waitForRun(server.core, first.id);
    const alice = await server.connect({ cookie: cookieFor(server.tokenFor(ALICE)) });
    const second = await startRun(server.core, session, ALICE, "第二次");
    await alice.next("ask_user_questions");
    const asAlice = { cookie: cookieFor(server.tokenFor(ALICE)) };
    const asBob = { cookie: cookieFor(server.tokenFor(BOB)) };
    const runs = `/api/sessions/${session.id}/runs`;

    const anonymous = await get(server, runs);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: { code: "UNAUTHORIZED", message: "not signed in" } });
    const history = await (await get(server, runs, asAlice)).json();
    expect(history).toMatchObject({
      activeRunId: second.id,
      runs: [
        { id: second.id, status: "running", title: "第二次", senderId: ALICE },
        { id: first.id, status: "completed", title: "第一次：部署到测试环境", senderId: BOB },
      ],
    });

    const old = await (await get(server, `${runs}/${first.id}`, asAlice)).json();
    expect(old).toMatchObject({ run: { id: first.id, status: "completed" }, active: false });
    const current = await (await get(server, `${runs}/${second.id}`, asAlice)).json();
    expect(current).toMatchObject({ run: { id: second.id, status: "running" }, active: true });

    // Bob wrote in the group, so he is a member: he may view all of its runs, Alice's included (access.ts).
    expect((await get(server, runs, asBob)).status).toBe(200);
    const bobSeesAlices = await get(server, `${runs}/${second.id}`, asBob);
    expect(await bobSeesAlices.json()).toMatchObject({ run: { id: second.id }, canViewSession: true });

    // Carol was never seen in the chat: the history and every run are 403 to her.
    const asCarol = { cookie: cookieFor(server.tokenFor(CAROL)) };
    const carolsTries = [runs, `${runs}/${first.id}`, `${runs}/${second.id}`];
    const carolSees = await Promise.all(
      carolsTries.map(async (url) => (await get(server, url, asCarol)).status),
    );
    expect(carolSees).toEqual([403, 403, 403]);

    // Once Bob has not been seen in the chat for longer than the window he is no member any more and may
    // not view the chat's session, but his own task's page still opens.
    coreClock += VIEW_MEMBERSHIP_MS + HOUR_MS;
    expect((await get(server, runs, asBob)).status).toBe(403);
    const own = await get(server, `${runs}/${first.id}`, asBob);
    expect(await own.json()).toMatchObject({ run: { id: first.id, senderId: BOB }, canViewSession: false });
    const notHis = await get(server, `${runs}/${second.id}`, asBob);
    const unknown = await get(server, `${runs}/nope`, asBob);
    const elsewhere = await get(server, `/api/sessions/other/runs/${first.id}`, asBob);
    expect([notHis.status, unknown.status, elsewhere.status]).toEqual([403, 403, 403]);
    expect(notHis.headers.get("cache-control")).toBe("no-store");
    expect(await notHis.json()).toEqual(await unknown.json());
    expect(await elsewhere.json()).toEqual({
      error: { code: "FORBIDDEN", message: "you may not view this run" },
    });
  });
});

describe("the WebSocket with the sign-in cookie", () => {
  it("authenticates an upgrade that carries only the cookie, as the cookie's user", async () => {
    const server = await startPageServer();
    const session = await createSession(server.core, ALICE);
    const alice = await server.connect({
      cookie: `theme=dark; ${cookieFor(server.tokenFor(ALICE))}`,
      origin: server.base,
    });
    alice.send({ type: "subscribe", sessionId: session.id });
    expect((await alice.next("subscribed")).data).toEqual({ canAnswer: false, canCancel: true });

    const run = await startRun(server.core, session, ALICE);
    const ask = await alice.next("ask_user_questions");
    expect(server.core.registry.get(ask.data.requestId)?.answererId).toBe(ALICE);
    expect(server.core.hub.canReach({ userId: ALICE })).toBe(true);

    // A browser that signed in as Bob cannot see Alice's private session.
    const bob = await server.connect({ cookie: cookieFor(server.tokenFor(BOB)), origin: server.base });
    bob.send({ type: "subscribe", sessionId: session.id });
    expect((await bob.next("error")).data.code).toBe("forbidden");

    // The panel's answers are what the hub accepts.
    const questions = ask.data.questions as PanelQuestion[];
    let states = emptyState(questions);
    states = [
      selectOption(questions[0]!, states[0]!, "React"),
      typeOther(questions[1]!, selectOption(questions[1]!, states[1]!, "i18n"), "  Offline mode "),
    ];
    alice.send({
      type: "ask_user_questions_result",
      sessionId: session.id,
      data: { requestId: ask.data.requestId, answers: collectAnswers(questions, states) },
    });
    await alice.next("ask_user_questions_accepted");
    const finished = await waitForRun(server.core, run.id);
    expect(JSON.parse(finished.text ?? "{}")).toEqual({
      answers: [
        { question: questions[0]!.question, selectedLabels: ["React"], customInput: null },
        { question: questions[1]!.question, selectedLabels: ["i18n"], customInput: "Offline mode" },
      ],
    });
  });

  it("works with the cookie /auth/local sets, and a refresh gets the pending ask back with its requestId", async () => {
    const server = await startPageServer({ localUsers: LOCAL_USERS });
    const session = await createSession(server.core, ALICE);
    const signIn = await get(server, `/auth/local?user=${ALICE}&next=/`);
    const cookie = cookieFor(sessionSetCookie(signIn)?.value ?? "");
    const first = await server.connect({ cookie, origin: server.base });
    await startRun(server.core, session, ALICE);
    const ask = await first.next("ask_user_questions");
    await first.close();

    const again = await server.connect({ cookie, origin: server.base });
    again.send({ type: "subscribe", sessionId: session.id });
    expect((await again.next("subscribed")).data).toEqual({ canAnswer: true, canCancel: true });
    expect((await again.next("ask_user_questions")).data.requestId).toBe(ask.data.requestId);
  });

  it("refuses a cookie sent from another site's page (403) and a bad cookie (401); tokens still work", async () => {
    const server = await startPageServer();
    const cookie = cookieFor(server.tokenFor(ALICE));
    expect(await server.refusedStatus({ cookie, origin: "https://evil.com" })).toBe(403);
    expect(
      await server.refusedStatus({ cookie: cookieFor(server.tokenFor(ALICE, -1)), origin: server.base }),
    ).toBe(401);
    expect(await server.refusedStatus({ cookie: "fpb_session=garbage" })).toBe(401);
    expect(await server.refusedStatus({ origin: server.base })).toBe(401);
    // An explicit token is not a browser's ambient credential: no origin rule for it.
    const bearer = await server.connect({
      authorization: `Bearer ${server.tokenFor(BOB)}`,
      origin: "https://app",
    });
    await bearer.sync();
    expect(server.core.hub.canReach({ userId: BOB })).toBe(true);
  });

  it("reads the cookie header the way browsers send it", () => {
    expect(readCookie(`a=1; ${SESSION_COOKIE}=v1.x.y; b=2`)).toBe("v1.x.y");
    expect(readCookie(`${SESSION_COOKIE}="v1.x.y"`)).toBe("v1.x.y");
    expect(readCookie(`x${SESSION_COOKIE}=nope`)).toBeNull();
    expect(readCookie(`${SESSION_COOKIE}=`)).toBeNull();
    expect(readCookie(undefined)).toBeNull();
    // Two of the same name (a stale path's copy): the first, as browsers order the more specific first.
    expect(readCookie(`${SESSION_COOKIE}=first; ${SESSION_COOKIE}=second`)).toBe("first");
    expect(readCookie(`junk; ;=; ${SESSION_COOKIE}=v1.a.b`)).toBe("v1.a.b");
  });
});

describe("QuestionPanel logic", () => {
  const ask = sampleAsk();
  const single = ask.questions[0]! as PanelQuestion; // Framework: single-select, first option has a preview
  const multi = ask.questions[1]! as PanelQuestion; // Features: multi-select
  const questions = [single, multi];

  const answered = (states: QuestionState[]) => canSubmit(questions, states);

  describe("Submit", () => {
    it("is enabled only when every question has a choice or non-blank 其他", () => {
      const empty = emptyState(questions);
      expect(answered(empty)).toBe(false);
      const oneDone = [selectOption(single, empty[0]!, "React"), empty[1]!];
      expect(answered(oneDone)).toBe(false);
      expect(answered([oneDone[0]!, typeOther(multi, empty[1]!, "   ")])).toBe(false);
      expect(answered([oneDone[0]!, typeOther(multi, empty[1]!, "Offline")])).toBe(true);
      expect(answered([typeOther(single, empty[0]!, "Svelte"), selectOption(multi, empty[1]!, "i18n")])).toBe(
        true,
      );
    });

    it("stays disabled for a viewer who may not answer, and while an answer is on its way", () => {
      const states = [selectOption(single, emptyState([single])[0]!, "React")];
      expect(canSubmit([single], states)).toBe(true);
      expect(canSubmit([single], states, { canAnswer: false })).toBe(false);
      expect(canSubmit([single], states, { busy: true })).toBe(false);
      expect(canSubmit([], [])).toBe(false);
      expect(canSubmit([single], [])).toBe(false);
    });

    it("goes off again when a multi-select choice is unticked and nothing else is left", () => {
      let state = selectOption(multi, emptyState([multi])[0]!, "i18n");
      expect(canSubmit([multi], [state])).toBe(true);
      state = selectOption(multi, state, "i18n", false);
      expect(canSubmit([multi], [state])).toBe(false);
    });
  });

  describe("single-select", () => {
    it("choosing an option replaces the choice and clears 其他", () => {
      let state = typeOther(single, emptyState([single])[0]!, "Svelte");
      state = selectOption(single, state, "Vue 3 (Recommended)");
      expect(state).toEqual({ selected: ["Vue 3 (Recommended)"], other: "" });
      state = selectOption(single, state, "React");
      expect(state.selected).toEqual(["React"]);
    });

    it("typing non-blank text in 其他 clears the choice; blank text does not", () => {
      const chosen = selectOption(single, emptyState([single])[0]!, "React");
      expect(typeOther(single, chosen, "  ")).toEqual({ selected: ["React"], other: "  " });
      expect(typeOther(single, chosen, "Svelte")).toEqual({ selected: [], other: "Svelte" });
    });

    it("collects either the choice or the custom text, never both", () => {
      const chosen = selectOption(single, emptyState([single])[0]!, "React");
      expect(collectAnswers([single], [chosen])).toEqual([
        { question: single.question, selectedLabels: ["React"], customInput: null },
      ]);
      // Even a state built by hand with both keeps only the text, as the server would.
      expect(collectAnswers([single], [{ selected: ["React"], other: " Svelte " }])).toEqual([
        { question: single.question, selectedLabels: [], customInput: "Svelte" },
      ]);
    });

    it("ignores labels that are not options", () => {
      const state = emptyState([single])[0]!;
      expect(selectOption(single, state, "Angular")).toBe(state);
    });
  });

  describe("multi-select", () => {
    it("toggles choices, keeps them in option order, and keeps 其他 alongside", () => {
      let state = emptyState([multi])[0]!;
      state = selectOption(multi, state, "PDF export");
      state = selectOption(multi, state, "Dark mode");
      state = typeOther(multi, state, "Offline");
      state = selectOption(multi, state, "Dark mode"); // ticking twice changes nothing
      expect(state).toEqual({ selected: ["Dark mode", "PDF export"], other: "Offline" });
      expect(collectAnswers([multi], [state])).toEqual([
        { question: multi.question, selectedLabels: ["Dark mode", "PDF export"], customInput: "Offline" },
      ]);
      state = selectOption(multi, state, "PDF export", false);
      expect(collectAnswers([multi], [state])[0]?.selectedLabels).toEqual(["Dark mode"]);
    });

    it("sends blank 其他 as null", () => {
      const state = typeOther(multi, selectOption(multi, emptyState([multi])[0]!, "i18n"), "   ");
      expect(collectAnswers([multi], [state])[0]?.customInput).toBeNull();
    });
  });

  it("collects answers the server accepts unchanged, for every way of answering", () => {
    const asked = DEFAULT_ASK.questions as AskQuestion[];
    const ways: QuestionState[][] = [
      [
        selectOption(single, emptyState([single])[0]!, "React"),
        selectOption(multi, emptyState([multi])[0]!, "i18n"),
      ],
      [typeOther(single, emptyState([single])[0]!, "Svelte"), typeOther(multi, emptyState([multi])[0]!, "x")],
      [
        typeOther(single, selectOption(single, emptyState([single])[0]!, "React"), "Solid"),
        typeOther(multi, selectOption(multi, emptyState([multi])[0]!, "Dark mode"), "y"),
      ],
    ];
    for (const states of ways) {
      expect(canSubmit(questions, states)).toBe(true);
      const answers = collectAnswers(questions, states);
      expect(checkAnswers(asked, answers)).toEqual({ ok: true, answers });
    }
  });

  describe("previews", () => {
    it("lay out side by side only for single-select questions with a preview", () => {
      expect(hasPreview(single)).toBe(true);
      expect(hasPreview(multi)).toBe(false);
      const multiWithPreview = { ...multi, options: multi.options.map((o) => ({ ...o, preview: "x" })) };
      expect(hasPreview(multiWithPreview)).toBe(false);
      expect(previewFor(multiWithPreview, { selected: ["i18n"], other: "" })).toEqual({
        label: null,
        text: null,
      });
    });

    it("follow the hovered option, else the chosen one, and show code without its fence", () => {
      const none = emptyState([single])[0]!;
      expect(previewFor(single, none)).toEqual({ label: null, text: null });
      const vue = selectOption(single, none, "Vue 3 (Recommended)");
      expect(previewFor(single, vue)).toEqual({ label: "Vue 3 (Recommended)", text: "createApp()" });
      expect(previewFor(single, vue, "React")).toEqual({ label: "React", text: null });
      expect(previewFor(single, none, "Vue 3 (Recommended)").text).toBe("createApp()");
    });

    it("unfence leaves anything but a single fenced block as it is", () => {
      expect(unfence("```ts\na\nb\n```")).toBe("a\nb");
      expect(unfence("~~~\n<b>x</b>\n~~~\n")).toBe("<b>x</b>");
      expect(unfence("plain\n```\ncode\n```")).toBe("plain\n```\ncode\n```");
    });
  });
});
