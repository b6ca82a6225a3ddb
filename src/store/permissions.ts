import { randomUUID } from "node:crypto";
import type {
  PermissionScope,
  StandingDecision,
  StandingPermission,
  StandingPermissions,
} from "../domain/standing-permissions.ts";
import type { Db } from "./db.ts";

interface Row {
  id: string;
  session_id: string;
  tool_kind: string;
  tool_name: string;
  decision: StandingDecision;
  title: string;
  granted_by: string;
  granted_at: number;
  agent_keeps: number;
}

const COLUMNS = "id, session_id, tool_kind, tool_name, decision, title, granted_by, granted_at, agent_keeps";

/**
 * Standing permissions in SQLite (`standing_permissions`): one row per session, chooser and scope, so "always"
 * outlives a restart, and the session page lists and revokes what this file holds. A person's new choice for a
 * scope replaces their old one (an "always allow" after an "always reject" for the same kind).
 */
export class SqliteStandingPermissions implements StandingPermissions {
  readonly #find;
  readonly #put;
  readonly #list;
  readonly #get;
  readonly #delete;
  readonly #newId: () => string;

  constructor(db: Db, newId: () => string = randomUUID) {
    this.#newId = newId;
    this.#find = db.prepare<[string, string, string, string], Row>(
      `SELECT ${COLUMNS} FROM standing_permissions
       WHERE session_id = ? AND granted_by = ? AND tool_kind = ? AND tool_name = ?`,
    );
    this.#put = db.prepare(
      `INSERT INTO standing_permissions (${COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (session_id, granted_by, tool_kind, tool_name) DO UPDATE SET id = excluded.id,
         decision = excluded.decision, title = excluded.title, granted_at = excluded.granted_at,
         agent_keeps = excluded.agent_keeps`,
    );
    this.#list = db.prepare<[string], Row>(
      `SELECT ${COLUMNS} FROM standing_permissions WHERE session_id = ? ORDER BY granted_at, id`,
    );
    this.#get = db.prepare<[string, string], Row>(
      `SELECT ${COLUMNS} FROM standing_permissions WHERE session_id = ? AND id = ?`,
    );
    this.#delete = db.prepare("DELETE FROM standing_permissions WHERE session_id = ? AND id = ?");
  }

  find(sessionId: string, personId: string, scope: PermissionScope): StandingPermission | undefined {
    const row = this.#find.get(sessionId, personId, scope.kind, scope.tool);
    return row ? entryOf(row) : undefined;
  }

  grant(entry: Omit<StandingPermission, "id">): StandingPermission {
    const made = { ...entry, id: this.#newId() };
    this.#put.run(
      made.id,
      made.sessionId,
      made.kind,
      made.tool,
      made.decision,
      made.title,
      made.grantedBy,
      made.grantedAt,
      made.agentKeeps ? 1 : 0,
    );
    return made;
  }

  list(sessionId: string): StandingPermission[] {
    return this.#list.all(sessionId).map(entryOf);
  }

  revoke(sessionId: string, id: string): StandingPermission | undefined {
    const row = this.#get.get(sessionId, id);
    if (!row) return undefined;
    this.#delete.run(sessionId, id);
    return entryOf(row);
  }
}

function entryOf(row: Row): StandingPermission {
  return {
    id: row.id,
    sessionId: row.session_id,
    kind: row.tool_kind,
    tool: row.tool_name,
    decision: row.decision,
    title: row.title,
    grantedBy: row.granted_by,
    grantedAt: row.granted_at,
    ...(row.agent_keeps ? { agentKeeps: true as const } : {}),
  };
}
