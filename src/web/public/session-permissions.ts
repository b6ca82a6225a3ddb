/**
 * The session's standing permissions (issue 30, "always allow"): what its ACP permission forms were told to
 * allow or refuse from now on (`GET /api/sessions/:id/permissions`), each with 撤销 for the person who chose
 * it (`POST …/:permissionId/revoke`). Read when the page opens and whenever a run of the session changes.
 */
import { fill } from "./page-text.ts";
import { byTestId, getJson, sessionPath, T } from "./session-state.ts";

interface Shown {
  id: string;
  decision: "allow" | "reject";
  scope: string;
  title: string;
  canRevoke: boolean;
  agentKeeps?: boolean;
}

export async function loadPermissions(): Promise<void> {
  let result: Awaited<ReturnType<typeof getJson>>;
  try {
    result = await getJson(`/api${sessionPath()}/permissions`);
  } catch {
    return;
  }
  // Not mounted (no ACP agent) or not the viewer's to see: the block stays hidden.
  if (!result.ok || !Array.isArray(result.body?.permissions)) return;
  render(result.body.permissions.filter(isShown));
}

function render(entries: Shown[]): void {
  const block = byTestId("permissions");
  const list = byTestId("permission-list");
  list.replaceChildren(...entries.map(item));
  block.hidden = entries.length === 0;
}

function item(entry: Shown): HTMLElement {
  const li = document.createElement("li");
  li.dataset.permissionId = entry.id;
  const what = document.createElement("span");
  const words = entry.decision === "allow" ? T.permissions.allowed : T.permissions.rejected;
  what.textContent = fill(words, { scope: entry.scope });
  const on = document.createElement("span");
  on.className = "muted";
  on.textContent = ` ${fill(T.permissions.chosenOn, { title: entry.title })}`;
  li.append(what, on);
  if (entry.agentKeeps) {
    // The agent was sent its own "always" (it offered no "once"): 撤销 here cannot reach what it keeps.
    const kept = document.createElement("span");
    kept.className = "muted";
    kept.dataset.testid = "permission-agent-keeps";
    kept.textContent = ` ${T.permissions.agentKeeps}`;
    li.append(kept);
  }
  if (entry.canRevoke) {
    const button = document.createElement("button");
    button.type = "button";
    button.className = "secondary-button";
    button.dataset.testid = "revoke-permission";
    button.textContent = T.permissions.revoke;
    button.addEventListener("click", () => void revoke(entry.id, button));
    li.append(" ", button);
  }
  return li;
}

async function revoke(id: string, button: HTMLButtonElement): Promise<void> {
  button.disabled = true;
  const note = byTestId("permission-note");
  let response: Response;
  try {
    response = await fetch(`/api${sessionPath()}/permissions/${encodeURIComponent(id)}/revoke`, {
      method: "POST",
      credentials: "same-origin",
      cache: "no-store",
    });
  } catch {
    button.disabled = false;
    note.textContent = T.permissions.revokeFailed;
    return;
  }
  note.textContent = response.ok
    ? T.permissions.revoked
    : response.status === 403
      ? T.run.onlyOwner
      : T.permissions.revokeFailed;
  note.hidden = false;
  if (!response.ok) button.disabled = false;
  await loadPermissions();
}

function isShown(value: unknown): value is Shown {
  if (typeof value !== "object" || value === null) return false;
  const entry = value as Record<string, unknown>;
  return (
    typeof entry.id === "string" &&
    (entry.decision === "allow" || entry.decision === "reject") &&
    typeof entry.scope === "string" &&
    typeof entry.title === "string" &&
    typeof entry.canRevoke === "boolean"
  );
}
