/**
 * The session page when it cannot show the session: signed out (the sign-in choices: a local user's link, or
 * how to get a Feishu one), forbidden; and the signed-in viewer's name with 退出登录.
 */
import { fill } from "./page-text.ts";
import { byTestId, getJson, page, show, T } from "./session-state.ts";

interface Viewer {
  userId: string;
  name?: string;
}

interface SignIn {
  mode?: string;
  users?: { openId: string; name: string }[];
}

export async function signedOut(): Promise<void> {
  page.stopped = true;
  page.ws?.close();
  try {
    const me = await getJson("/auth/me");
    showSignIn(me.body?.signIn);
  } catch {
    showSignIn(undefined);
  }
}

export function showSignIn(signIn: SignIn | undefined): void {
  page.stopped = true;
  byTestId("viewer").hidden = true;
  const list = byTestId("sign-in-local");
  list.replaceChildren();
  const users = signIn?.mode === "local" && Array.isArray(signIn.users) ? signIn.users : undefined;
  const local = users !== undefined;
  if (users) {
    const next = location.pathname;
    for (const user of users) {
      const link = document.createElement("a");
      link.href = `/auth/local?user=${encodeURIComponent(user.openId)}&next=${encodeURIComponent(next)}`;
      link.textContent = fill(T.page.signInAs, { name: user.name });
      link.dataset.testid = "sign-in-local-user";
      link.dataset.user = user.openId;
      const item = document.createElement("li");
      item.append(link);
      list.append(item);
    }
  }
  list.hidden = !local;
  byTestId("sign-in-feishu").hidden = local;
  show("sign-in-prompt");
}

export function showForbidden(): void {
  page.stopped = true;
  clearTimeout(page.reconnectTimer);
  page.ws?.close();
  show("forbidden");
}

export function showViewer(me: Viewer): void {
  byTestId("viewer-name").textContent = me.name ? `${me.name} (${me.userId})` : me.userId;
  byTestId("viewer").hidden = false;
}

byTestId("sign-out").addEventListener("click", async () => {
  try {
    await fetch("/auth/logout", { method: "POST", credentials: "same-origin" });
  } finally {
    location.reload();
  }
});
