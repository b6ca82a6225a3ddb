/**
 * 连接外部 Agent: a folded panel in the console with a ready agent token and the lines that connect Claude
 * Code, Codex and Gemini CLI to this bot (GET /console/api/agent-setup, local mode only; the lines come from
 * src/agents-api/connect-recipes.ts, which the README's blocks are checked against). Text only: every value
 * goes in with textContent, never as HTML.
 */

import { CONSOLE_WORDS, type ConsoleLocale, isConsoleLocale, LOCALE_EVENT } from "./words.ts";

const panelBlocks = (codexEnv: string): readonly (readonly [string, string])[] => [
  ["claudeCode", "Claude Code"],
  ["claudeCodeJson", "Claude Code · .mcp.json"],
  ["codexToml", "Codex · ~/.codex/config.toml"],
  ["codexEnv", codexEnv],
  ["geminiJson", "Gemini CLI · ~/.gemini/settings.json"],
  ["curl", "HTTP API (curl)"],
  ["token", "Agent token"],
];

/** The panel in `locale` (the console's language: the page's scripts share it through LOCALE_EVENT). */
export function renderAgentPanel(
  doc: Document,
  setup: Record<string, unknown>,
  locale: ConsoleLocale = "zh_cn",
): HTMLDetailsElement {
  const w = CONSOLE_WORDS[locale].agents;
  const panel = doc.createElement("details");
  panel.className = "agent-panel";
  panel.dataset.testid = "agent-setup";
  const summary = doc.createElement("summary");
  summary.textContent = w.summary;
  panel.append(summary);
  const intro = doc.createElement("p");
  intro.className = "agent-intro";
  const allowed = Array.isArray(setup.mayAsk) ? setup.mayAsk.join(w.allowedSeparator) : "";
  intro.textContent = w.intro(String(setup.agent), allowed);
  panel.append(intro);
  for (const [key, title] of panelBlocks(w.codexEnv)) {
    const value = setup[key];
    if (typeof value !== "string") continue;
    const heading = doc.createElement("div");
    heading.className = "agent-block-title";
    heading.textContent = title;
    const pre = doc.createElement("pre");
    pre.className = "agent-block";
    pre.dataset.testid = `agent-setup-${key}`;
    pre.textContent = value;
    panel.append(heading, pre);
  }
  return panel;
}

async function mount() {
  const host = document.querySelector(".log-panel");
  if (!host) return;
  const response = await fetch("/console/api/agent-setup", { cache: "no-store" });
  if (!response.ok) return;
  const setup = await response.json();
  // The console's script may have chosen its language already (console.ts sets it from /chats).
  let panel = renderAgentPanel(document, setup, document.documentElement.lang === "en" ? "en_us" : "zh_cn");
  host.prepend(panel);
  document.addEventListener(LOCALE_EVENT, (event) => {
    const locale = event instanceof CustomEvent && isConsoleLocale(event.detail) ? event.detail : "zh_cn";
    const open = panel.open;
    const next = renderAgentPanel(document, setup, locale);
    next.open = open;
    panel.replaceWith(next);
    panel = next;
  });
}

if (typeof document !== "undefined") {
  mount().catch((error) => console.warn("agent setup panel unavailable", error));
}
