/**
 * Which area owns each table of the bot's SQLite file (the migrations in migrations.ts create them): only the files
 * listed may name a table in SQL. The owner of a table is the one place that knows what its rows mean, so
 * no area reads another's rows behind the imports (issue 26: a join on `progress_cards` from agents-api was
 * invisible to every import rule). test/boundary.test.ts holds every SQL string in src/ to this map, and
 * every table the migrations create to having an owner here.
 */
export const TABLE_OWNERS: Readonly<Record<string, readonly string[]>> = {
  // the bot's sessions and runs (harness/runner.ts through its repositories: repos.ts, queue-rows.ts)
  sessions: ["src/store/repos.ts"],
  runs: ["src/store/repos.ts"],
  messages: ["src/store/repos.ts"],
  queued_messages: ["src/store/queue-rows.ts"],
  pending_turns: ["src/store/turns.ts"],
  session_members: ["src/store/members.ts"],
  // questions, whoever asked them (asks/registry.ts)
  asks: ["src/store/asks.ts"],
  ask_audit: ["src/store/audit.ts"],
  // the Feishu channel's cards and inbound messages
  progress_cards: ["src/store/feishu.ts"],
  queued_cards: ["src/store/feishu.ts"],
  ask_reminders: ["src/store/feishu.ts"],
  ask_pings: ["src/store/feishu.ts"],
  inbound_messages: ["src/store/feishu.ts"],
  bot_identities: ["src/store/feishu.ts"],
  // "always allow" on ACP permission forms (harness/agents/acp, the session page)
  standing_permissions: ["src/store/permissions.ts"],
  // CardKit card entities (FEISHU_CARD_TRANSPORT=cardkit)
  cardkit_entities: ["src/store/cardkit.ts"],
  // sign-in to the session pages
  token_revocations: ["src/store/token-revocations.ts"],
  spent_sign_in_links: ["src/store/token-revocations.ts"],
  // outside agents
  agent_tasks: ["src/agents-api/store.ts"],
  agent_asks: ["src/agents-api/store.ts"],
  issued_agent_tokens: ["src/agents-api/token-store.ts"],
  revoked_agent_names: ["src/agents-api/token-store.ts"],
};
