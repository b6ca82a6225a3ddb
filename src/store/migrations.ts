/**
 * Versioned migrations, applied in order inside one transaction each; `PRAGMA user_version` records
 * the last one applied. Append new migrations; never edit a released one.
 */
export const MIGRATIONS: readonly string[] = [
  `
  CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    channel     TEXT NOT NULL,
    chat_type   TEXT NOT NULL,
    chat_id     TEXT,
    workspace   TEXT NOT NULL,
    owner_id    TEXT NOT NULL,
    title       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
  );
  CREATE TABLE runs (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    sender_id   TEXT NOT NULL,
    input       TEXT NOT NULL,
    status      TEXT NOT NULL,
    steps_json  TEXT NOT NULL DEFAULT '[]',
    final_text  TEXT,
    error       TEXT,
    started_at  INTEGER NOT NULL,
    ended_at    INTEGER
  );
  CREATE INDEX runs_by_session ON runs(session_id, started_at);
  CREATE INDEX runs_by_status ON runs(status);
  CREATE TABLE messages (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    run_id        TEXT,
    role          TEXT NOT NULL,
    content       TEXT NOT NULL,
    tool_calls    TEXT,
    tool_call_id  TEXT,
    tool_name     TEXT,
    summary       TEXT,
    created_at    INTEGER NOT NULL
  );
  CREATE INDEX messages_by_session ON messages(session_id, id);
  CREATE TABLE queued_messages (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL REFERENCES sessions(id),
    sender_id   TEXT NOT NULL,
    text        TEXT NOT NULL,
    source_json TEXT,
    seq         REAL NOT NULL,
    created_at  INTEGER NOT NULL
  );
  CREATE INDEX queue_by_session ON queued_messages(session_id, seq);
  `,
  `
  -- Feishu redelivers an event for up to 6 hours (15 s, 5 min, 1 h, 6 h): remember message ids for a day.
  CREATE TABLE inbound_messages (
    message_id   TEXT PRIMARY KEY,
    received_at  INTEGER NOT NULL
  );
  CREATE INDEX inbound_by_time ON inbound_messages(received_at);
  -- The progress card of each run: which message to PATCH, in which chat, for whom.
  CREATE TABLE progress_cards (
    run_id             TEXT PRIMARY KEY,
    session_id         TEXT NOT NULL,
    message_id         TEXT NOT NULL,
    chat_id            TEXT NOT NULL,
    sender_id          TEXT NOT NULL,
    source_message_id  TEXT NOT NULL,
    created_at         INTEGER NOT NULL,
    gone               INTEGER NOT NULL DEFAULT 0
  );
  CREATE INDEX cards_by_message ON progress_cards(message_id);
  CREATE INDEX cards_by_session ON progress_cards(session_id, created_at);
  CREATE TABLE queued_cards (
    queue_id    TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    source_message_id TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    created_at  INTEGER NOT NULL
  );
  -- One row per ask: when, where it could be answered, and how it ended.
  CREATE TABLE ask_audit (
    request_id    TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    run_id        TEXT NOT NULL,
    answerer_id   TEXT NOT NULL,
    questions     INTEGER NOT NULL,
    surfaces      TEXT NOT NULL,
    asked_at      INTEGER NOT NULL,
    outcome       TEXT,
    answered_by   TEXT,
    answered_via  TEXT,
    settled_at    INTEGER
  );
  CREATE INDEX audit_by_session ON ask_audit(session_id, asked_at);
  `,
  `
  -- Where a run's message came from (channel, chat, message), so a run resumed after a crash can find its
  -- chat again even if its card was never recorded.
  ALTER TABLE runs ADD COLUMN source_json TEXT;
  `,
  `
  -- Runs whose card got its @-mention reminder: one per card, also across a restart (feishu/ask-reminder.ts).
  CREATE TABLE ask_reminders (
    run_id   TEXT PRIMARY KEY,
    sent_at  INTEGER NOT NULL
  );
  `,
  `
  -- Revoking a user's tokens: every token issued before not_before is refused (npm run token -- --revoke).
  CREATE TABLE IF NOT EXISTS token_revocations (
    user_id     TEXT PRIMARY KEY,
    not_before  INTEGER NOT NULL,
    revoked_at  INTEGER NOT NULL
  );
  -- Who has written to the bot, or clicked one of its cards, in a session's chat, and when last: they may
  -- view its runs (domain/access.ts). Seeded with everyone who started a run before this table existed.
  CREATE TABLE IF NOT EXISTS session_members (
    session_id    TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    last_seen_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, user_id)
  );
  INSERT OR IGNORE INTO session_members (session_id, user_id, last_seen_at)
    SELECT session_id, sender_id, MAX(started_at) FROM runs GROUP BY session_id, sender_id;
  `,
  `
  -- Durable asks (issue 16): one row per ask from register on; the status leaves 'pending' only by a
  -- compare-and-set (UPDATE ... WHERE status = 'pending'), so the first answer wins across surfaces and
  -- processes. The audit becomes a view of these rows: one source of truth.
  CREATE TABLE asks (
    request_id      TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    tool_call_id    TEXT,
    answerer_id     TEXT NOT NULL,
    questions       TEXT NOT NULL,
    question_count  INTEGER NOT NULL,
    metadata        TEXT,
    surfaces        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    extended_ms     INTEGER NOT NULL DEFAULT 0,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'answered', 'timeout', 'cancelled', 'superseded')),
    answer          TEXT,
    reason          TEXT,
    answered_via    TEXT,
    answered_by     TEXT,
    settled_at      INTEGER
  );
  CREATE INDEX asks_pending ON asks(session_id) WHERE status = 'pending';
  CREATE INDEX asks_by_session ON asks(session_id, created_at);
  CREATE INDEX asks_by_tool_call ON asks(run_id, tool_call_id);
  -- Asks of earlier versions were never durable: one without an outcome died with its process.
  INSERT INTO asks (request_id, session_id, run_id, answerer_id, questions, question_count, surfaces,
                    created_at, expires_at, status, reason, answered_via, answered_by, settled_at)
    SELECT request_id, session_id, run_id, answerer_id, '[]', questions, surfaces, asked_at, asked_at,
           COALESCE(outcome, 'cancelled'), CASE WHEN outcome IS NULL THEN 'lost in a restart' END,
           answered_via, answered_by, settled_at
    FROM ask_audit;
  DROP TABLE ask_audit;
  CREATE VIEW ask_audit AS
    SELECT request_id, session_id, run_id, answerer_id, question_count AS questions, surfaces,
           created_at AS asked_at, CASE status WHEN 'pending' THEN NULL ELSE status END AS outcome,
           answered_by, answered_via, settled_at, rowid AS seq
    FROM asks;
  -- A turn that waits on ask_user_questions, beside the history (never inside it: a model must never be sent
  -- a call without its result). Deleted in the transaction that writes the finished turn into messages.
  CREATE TABLE pending_turns (
    turn_id     TEXT PRIMARY KEY,
    run_id      TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    text        TEXT NOT NULL,
    calls       TEXT NOT NULL,
    created_at  INTEGER NOT NULL
  );
  CREATE INDEX pending_turns_by_run ON pending_turns(run_id, created_at);
  `,
  // Outside agents' tasks and asks (the MCP server / HTTP API). IF NOT EXISTS: builds before this migration
  // created these tables ad hoc on start, and such a file must upgrade without failing on them.
  `
  CREATE TABLE IF NOT EXISTS agent_tasks (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    target      TEXT NOT NULL,
    chat_type   TEXT NOT NULL,
    implicit    INTEGER NOT NULL,
    run_json    TEXT NOT NULL,
    status      TEXT NOT NULL,
    updated_at  INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS agent_tasks_by_status ON agent_tasks(status);
  CREATE TABLE IF NOT EXISTS agent_asks (
    ask_id        TEXT PRIMARY KEY,
    agent         TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    answerer_id   TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    outcome_json  TEXT,
    settled_at    INTEGER
  );
  `,
  `
  -- When a card's final state (its run completed, failed or cancelled) was confirmed on the platform. A card
  -- whose run ended without it (killed before the last PATCH landed) gets that PATCH after a restart.
  ALTER TABLE progress_cards ADD COLUMN final_landed_at INTEGER;
  -- Cards of runs that ended before this column existed: taken as landed, except those of the last hour (a
  -- deploy's kill may have cut their last PATCH); repairing every card of 14 days would be a burst of PATCHes.
  UPDATE progress_cards SET final_landed_at = created_at
    WHERE (run_id IN (SELECT id FROM runs WHERE status IN ('completed', 'failed', 'cancelled')
                                          AND COALESCE(ended_at, 0) < (unixepoch() - 3600) * 1000)
        OR run_id IN (SELECT id FROM agent_tasks WHERE status IN ('completed', 'failed', 'cancelled')
                                                 AND updated_at < (unixepoch() - 3600) * 1000));
  CREATE INDEX cards_final_pending ON progress_cards(created_at) WHERE final_landed_at IS NULL AND gone = 0;
  `,
  `
  -- A topic session (issue 19) records which message of which group it hangs under, so nothing reads it out of
  -- the id. Both NULL for every other session.
  ALTER TABLE sessions ADD COLUMN topic_root_id TEXT;
  ALTER TABLE sessions ADD COLUMN topic_group_id TEXT;
  -- The one time an id is read: topic sessions written before these columns existed (the unreleased first cut
  -- of topics, id feishu-{appId}-group-{chatId}-topic-{root}). Matched against the row's own chat_id, not by
  -- splitting on '-', so a group whose chat id merely contains '-topic-' stays a group.
  UPDATE sessions
    SET topic_root_id  = substr(id, instr(id, '-group-' || chat_id || '-topic-') + length('-group-' || chat_id || '-topic-')),
        topic_group_id = substr(id, 1, instr(id, '-group-' || chat_id || '-topic-') + length('-group-' || chat_id) - 1)
    WHERE channel = 'feishu' AND chat_type = 'group' AND chat_id IS NOT NULL AND id LIKE 'feishu-%'
      AND instr(id, '-group-' || chat_id || '-topic-') > 0
      AND substr(id, instr(id, '-group-' || chat_id || '-topic-') + length('-group-' || chat_id || '-topic-')) <> ''
      AND workspace LIKE '%' || substr(id, instr(id, '-group-' || chat_id || '-topic-') + length('-group-' || chat_id || '-topic-'));
  `,
  `
  -- A failed run's error in every language when the bot wrote it (JSON: locale -> text); NULL otherwise.
  ALTER TABLE runs ADD COLUMN error_words_json TEXT;
  `,
  // doors-tokens (issue 24 items 8, 11, 15): agent tokens and their revocations, the token behind each task and
  // ask, users' revocation generations, spent sign-in links.
  `
  -- Agent tokens as npm run token -- --agent minted them, so a revocation by name or id knows what it revoked.
  CREATE TABLE IF NOT EXISTS issued_agent_tokens (
    token_id    TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    may_json    TEXT NOT NULL,
    issued_at   INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_at  INTEGER
  );
  CREATE INDEX IF NOT EXISTS issued_agent_tokens_by_agent ON issued_agent_tokens(agent);
  -- Every agent token of that name issued before not_before is refused (npm run token -- --revoke-agent).
  CREATE TABLE IF NOT EXISTS revoked_agent_names (
    agent       TEXT PRIMARY KEY,
    not_before  INTEGER NOT NULL,
    revoked_at  INTEGER NOT NULL
  );
  -- The token that made a task or an ask: only it may use them (NULL for rows from before this column).
  ALTER TABLE agent_tasks ADD COLUMN token_id TEXT;
  ALTER TABLE agent_asks ADD COLUMN token_id TEXT;
  -- Each revocation of a user moves their generation on; tokens carry the generation they were minted in.
  ALTER TABLE token_revocations ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;
  -- A sign-in link opens once: the hash of each link token spent at /auth/link, until it would expire.
  CREATE TABLE IF NOT EXISTS spent_sign_in_links (
    link_hash   TEXT PRIMARY KEY,
    spent_at    INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS spent_sign_in_links_by_expiry ON spent_sign_in_links(expires_at);
  `,
  // 拒绝回答 (issue 25): a person may decline an outside agent's question. A new status needs a new CHECK, which
  // SQLite changes only by rebuilding the table (rowids kept: the audit view orders by them); `declinable`
  // says who asked may read a decline (an outside agent), so a restart keeps the button on the card.
  `
  DROP VIEW ask_audit;
  CREATE TABLE asks_next (
    request_id      TEXT PRIMARY KEY,
    session_id      TEXT NOT NULL,
    run_id          TEXT NOT NULL,
    tool_call_id    TEXT,
    answerer_id     TEXT NOT NULL,
    questions       TEXT NOT NULL,
    question_count  INTEGER NOT NULL,
    metadata        TEXT,
    surfaces        TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    expires_at      INTEGER NOT NULL,
    extended_ms     INTEGER NOT NULL DEFAULT 0,
    status          TEXT NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'answered', 'timeout', 'cancelled', 'superseded', 'declined')),
    answer          TEXT,
    reason          TEXT,
    answered_via    TEXT,
    answered_by     TEXT,
    settled_at      INTEGER,
    declinable      INTEGER NOT NULL DEFAULT 0
  );
  INSERT INTO asks_next (rowid, request_id, session_id, run_id, tool_call_id, answerer_id, questions,
                         question_count, metadata, surfaces, created_at, expires_at, extended_ms, status, answer,
                         reason, answered_via, answered_by, settled_at)
    SELECT rowid, request_id, session_id, run_id, tool_call_id, answerer_id, questions, question_count, metadata,
           surfaces, created_at, expires_at, extended_ms, status, answer, reason, answered_via, answered_by,
           settled_at
    FROM asks;
  DROP TABLE asks;
  ALTER TABLE asks_next RENAME TO asks;
  CREATE INDEX asks_pending ON asks(session_id) WHERE status = 'pending';
  CREATE INDEX asks_by_session ON asks(session_id, created_at);
  CREATE INDEX asks_by_tool_call ON asks(run_id, tool_call_id);
  CREATE VIEW ask_audit AS
    SELECT request_id, session_id, run_id, answerer_id, question_count AS questions, surfaces,
           created_at AS asked_at, CASE status WHEN 'pending' THEN NULL ELSE status END AS outcome,
           answered_by, answered_via, settled_at, rowid AS seq
    FROM asks;
  `,
  // Usage footer (issue 30): what a run's model requests cost, as the service reported it. NULL is unknown (the
  // agent reports none, or a request did not say), never zero; rows of earlier runs keep NULL.
  `
  ALTER TABLE runs ADD COLUMN input_tokens INTEGER;
  ALTER TABLE runs ADD COLUMN output_tokens INTEGER;
  ALTER TABLE runs ADD COLUMN cached_tokens INTEGER;
  ALTER TABLE runs ADD COLUMN model TEXT;
  `,
  // The @-pings and expiry reminders sent (issue 25): which message points at which questions, so that a
  // restart still edits it once they end (feishu/progress/pings.ts). A row goes once its message was edited.
  `
  CREATE TABLE ask_pings (
    message_id   TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('ping', 'reminder')),
    run_id       TEXT NOT NULL,
    request_ids  TEXT NOT NULL,
    in_group     INTEGER NOT NULL,
    sent_at      INTEGER NOT NULL
  );
  `,
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
  "ALTER TABLE standing_permissions ADD COLUMN agent_keeps INTEGER NOT NULL DEFAULT 0", // the agent keeps it too
];
