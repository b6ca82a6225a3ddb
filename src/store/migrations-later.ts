/**
 * The migrations after the first file filled up (store/migrations.ts spreads these at its end, in order).
 * Append new migrations here; never edit a released one.
 */
export const LATER_MIGRATIONS: readonly string[] = [
  // "Always allow" (issue 30): standing ACP permission choices per session and scope (store/permissions.ts).
  `
  CREATE TABLE standing_permissions (
    id TEXT PRIMARY KEY, session_id TEXT NOT NULL, tool_kind TEXT NOT NULL, tool_name TEXT NOT NULL,
    decision    TEXT NOT NULL CHECK (decision IN ('allow', 'reject')),
    title       TEXT NOT NULL,
    granted_by  TEXT NOT NULL,
    granted_at  INTEGER NOT NULL,
    UNIQUE (session_id, granted_by, tool_kind, tool_name)
  );
  `,
  // Several Feishu apps in one process (issue 30): which app sent each card, ping and queued-message card, so that
  // each app repairs, edits and reorders only its own messages. NULL rows were written before, by the one app
  // there was; the first app claims them at start-up (store/feishu.ts claimUnowned).
  `
  ALTER TABLE progress_cards ADD COLUMN app_id TEXT;
  ALTER TABLE queued_cards ADD COLUMN app_id TEXT;
  ALTER TABLE ask_pings ADD COLUMN app_id TEXT;
  `,
  // The bot keeps an "always" (issue 30): 1 when the agent offered no "once" option, so it was sent its own
  // "always" and keeps it too (a revoke here cannot reach it; the card and the page say so).
  "ALTER TABLE standing_permissions ADD COLUMN agent_keeps INTEGER NOT NULL DEFAULT 0",
  // The app's bot as bot/v3/info last said (issue 27): a start, a replacement after a kill included, listens
  // without waiting for that call's turn in the app's budget (feishu/bot-identity.ts).
  `
  CREATE TABLE bot_identities (
    app_id TEXT PRIMARY KEY, open_id TEXT NOT NULL, name TEXT NOT NULL, checked_at INTEGER NOT NULL
  );
  `,
];
