import { randomUUID } from "node:crypto";
import type {
  PermissionScope,
  StandingPermission,
  StandingPermissions,
} from "../domain/standing-permissions.ts";
import { run, type StandingPermissionsTable, type StoreSql } from "./sql.ts";

/**
 * Standing permissions in the store (`standing_permissions`, on either dialect: sql.ts): one row per session,
 * chooser and scope, so "always" outlives a restart (and, on Postgres, is the same on every instance), and the
 * session page lists and revokes what the table holds. A person's new choice for a scope replaces their old one
 * (an "always allow" after an "always reject" for the same kind). Each method is one statement.
 */
export class StoreStandingPermissions implements StandingPermissions {
  readonly #store: StoreSql;
  readonly #newId: () => string;

  constructor(store: StoreSql, newId: () => string = randomUUID) {
    this.#store = store;
    this.#newId = newId;
  }

  async find(
    sessionId: string,
    personId: string,
    scope: PermissionScope,
  ): Promise<StandingPermission | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .selectFrom("standing_permissions")
        .selectAll()
        .where("session_id", "=", sessionId)
        .where("granted_by", "=", personId)
        .where("tool_kind", "=", scope.kind)
        .where("tool_name", "=", scope.tool)
        .executeTakeFirst(),
    );
    return row ? entryOf(row) : undefined;
  }

  async grant(entry: Omit<StandingPermission, "id">): Promise<StandingPermission> {
    const made = { ...entry, id: this.#newId() };
    const { db } = this.#store;
    const row = {
      id: made.id,
      session_id: made.sessionId,
      tool_kind: made.kind,
      tool_name: made.tool,
      decision: made.decision,
      title: made.title,
      granted_by: made.grantedBy,
      granted_at: made.grantedAt,
      agent_keeps: made.agentKeeps ? 1 : 0,
    };
    await run(this.#store, () =>
      db
        .insertInto("standing_permissions")
        .values(row)
        .onConflict((conflict) =>
          conflict.columns(["session_id", "granted_by", "tool_kind", "tool_name"]).doUpdateSet({
            id: row.id,
            decision: row.decision,
            title: row.title,
            granted_at: row.granted_at,
            agent_keeps: row.agent_keeps,
          }),
        )
        .execute(),
    );
    return made;
  }

  async list(sessionId: string): Promise<StandingPermission[]> {
    const { db } = this.#store;
    const rows = await run(this.#store, () =>
      db
        .selectFrom("standing_permissions")
        .selectAll()
        .where("session_id", "=", sessionId)
        .orderBy("granted_at")
        .orderBy("id")
        .execute(),
    );
    return rows.map(entryOf);
  }

  async revoke(sessionId: string, id: string): Promise<StandingPermission | undefined> {
    const { db } = this.#store;
    const row = await run(this.#store, () =>
      db
        .deleteFrom("standing_permissions")
        .where("session_id", "=", sessionId)
        .where("id", "=", id)
        .returningAll()
        .executeTakeFirst(),
    );
    return row ? entryOf(row) : undefined;
  }
}

function entryOf(row: StandingPermissionsTable): StandingPermission {
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
