import { describe, expect, it } from "vitest";
import {
  covers,
  MemoryStandingPermissions,
  type StandingPermissions,
  scopeOf,
  shownTool,
  standingOf,
  standingOption,
} from "../src/domain/standing-permissions.ts";
import { openDatabase } from "../src/store/db.ts";
import { StoreStandingPermissions } from "../src/store/permissions.ts";
import { ensureStoreSchema, STORE_PG_TYPES } from "../src/store/pg-schema.ts";
import { postgresSql, sqliteSql } from "../src/store/sql.ts";
import { usePostgres } from "./helpers/postgres.ts";

const options = [
  { optionId: "a1", kind: "allow_once" as const },
  { optionId: "aa", kind: "allow_always" as const },
  { optionId: "r1", kind: "reject_once" as const },
  { optionId: "ra", kind: "reject_always" as const },
];

describe("what an 'always' covers (domain/standing-permissions.ts)", () => {
  it("is the call's kind and the agent's tool name, never its title or path", () => {
    expect(scopeOf({ kind: "edit", name: "Edit" })).toEqual({ kind: "edit", tool: "Edit" });
    expect(scopeOf({ kind: "read" })).toEqual({ kind: "read", tool: "" });
    // Claude Code names no tool on its permission requests: an "always" on `Bash: ls` must not allow every
    // later command, nor one `Write notes.md` every edit, so an unnamed call that acts is never remembered.
    expect(scopeOf({ kind: "execute" })).toBeUndefined();
    expect(scopeOf({ kind: "edit", name: "" })).toBeUndefined();
    expect(scopeOf({ kind: "fetch" })).toBeUndefined();
    expect(scopeOf({ kind: "execute", name: "Bash" })).toEqual({ kind: "execute", tool: "Bash" });
    expect(covers({ kind: "edit", tool: "Edit" }, { kind: "edit", tool: "Edit" })).toBe(true);
    // Same kind, another tool: not the same permission; named and unnamed are not either.
    expect(covers({ kind: "edit", tool: "Edit" }, { kind: "edit", tool: "MultiEdit" })).toBe(false);
    expect(covers({ kind: "edit", tool: "" }, { kind: "edit", tool: "Edit" })).toBe(false);
    expect(covers({ kind: "edit", tool: "" }, { kind: "delete", tool: "" })).toBe(false);
  });

  it("takes the agent's _meta name (Claude Code's) for the tool-wide kinds only: edits, reads, searches, fetch", () => {
    expect(scopeOf({ kind: "edit", agentTool: "Edit" })).toEqual({ kind: "edit", tool: "Edit" });
    expect(scopeOf({ kind: "fetch", agentTool: "WebFetch" })).toEqual({ kind: "fetch", tool: "WebFetch" });
    expect(scopeOf({ kind: "read", agentTool: "mcp__acp__Read" })).toEqual({
      kind: "read",
      tool: "mcp__acp__Read",
    });
    // ACP's own name wins; a command named only in _meta is never tool-wide (it would allow every command).
    expect(scopeOf({ kind: "edit", name: "MultiEdit", agentTool: "Edit" })?.tool).toBe("MultiEdit");
    expect(scopeOf({ kind: "execute", agentTool: "Bash" })).toBeUndefined();
    for (const kind of ["delete", "move", "other", "switch_mode", "think"])
      expect(scopeOf({ kind, agentTool: "Anything" })).toBeUndefined();
    expect(scopeOf({ kind: "edit", agentTool: "  " })).toBeUndefined();
    // Shown as the adapter's titles say it; kept in full.
    expect(shownTool("mcp__acp__Write")).toBe("Write");
    expect(shownTool("mcp__acp__")).toBe("mcp__acp__");
    expect(shownTool("mcp__db__query")).toBe("mcp__db__query");
  });

  it("is nothing for a vague kind without a name (it would cover anything)", () => {
    expect(scopeOf({})).toBeUndefined();
    expect(scopeOf({ kind: "other", name: "  " })).toBeUndefined();
    expect(scopeOf({ kind: "think", name: null })).toBeUndefined();
    expect(scopeOf({ kind: "other", name: "mcp__db__query" })).toEqual({
      kind: "other",
      tool: "mcp__db__query",
    });
  });

  it("answers with the agent's 'once' option (the bot keeps the choice), else its 'always' one, else not at all", () => {
    expect(standingOf("allow_always")).toBe("allow");
    expect(standingOf("reject_always")).toBe("reject");
    expect(standingOf("allow_once")).toBeUndefined();
    expect(standingOption(options, "allow")?.optionId).toBe("a1");
    expect(standingOption(options, "reject")?.optionId).toBe("r1");
    expect(
      standingOption(
        options.filter((o) => o.kind !== "allow_once"),
        "allow",
      )?.optionId,
    ).toBe("aa");
    expect(standingOption([{ optionId: "r1", kind: "reject_once" as const }], "allow")).toBeUndefined();
  });
});

const pg = usePostgres();
const stores: [string, () => Promise<StandingPermissions>][] = [
  ["memory", async () => new MemoryStandingPermissions()],
  ["SQLite", async () => new StoreStandingPermissions(sqliteSql(openDatabase(":memory:")))],
  [
    "Postgres",
    async () => {
      const pool = pg().pool({ types: STORE_PG_TYPES });
      await ensureStoreSchema(pool);
      return new StoreStandingPermissions(postgresSql(pool));
    },
  ],
];

describe.each(stores)("standing permissions kept in %s", (_name, make) => {
  const entry = {
    sessionId: "s1",
    kind: "edit",
    tool: "Edit",
    decision: "allow" as const,
    title: "Edit a.md",
    grantedBy: "ou_a",
    grantedAt: 1,
  };

  it("keeps a choice to its chooser: another member's request of the same scope finds nothing, and their own choice replaces nothing of it", async () => {
    const store = await make();
    const alices = await store.grant(entry);
    expect(await store.find("s1", "ou_b", { kind: "edit", tool: "Edit" })).toBeUndefined();
    const bobs = await store.grant({ ...entry, decision: "reject", grantedBy: "ou_b", grantedAt: 2 });
    expect(await store.find("s1", "ou_a", entry)).toEqual(alices);
    expect(await store.find("s1", "ou_b", entry)).toEqual(bobs);
    expect(await store.list("s1")).toEqual([alices, bobs]);
  });

  it("finds a choice by session and scope, replaces it on a new choice, and revokes it by id", async () => {
    const store = await make();
    const made = await store.grant(entry);
    expect(await store.find("s1", "ou_a", { kind: "edit", tool: "Edit" })).toEqual(made);
    expect(await store.find("s2", "ou_a", { kind: "edit", tool: "Edit" })).toBeUndefined();
    expect(await store.find("s1", "ou_a", { kind: "edit", tool: "" })).toBeUndefined();
    const replaced = await store.grant({ ...entry, decision: "reject", grantedAt: 2 });
    expect(await store.list("s1")).toEqual([replaced]);
    expect(await store.revoke("s2", replaced.id)).toBeUndefined();
    expect(await store.revoke("s1", replaced.id)).toEqual(replaced);
    expect(await store.list("s1")).toEqual([]);
    expect(await store.find("s1", "ou_a", entry)).toBeUndefined();
  });
});
