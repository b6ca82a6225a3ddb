/**
 * 连接外部 Agent: a folded panel in the console with a ready agent token and the lines that connect Claude
 * Code, Codex and Gemini CLI to this bot (GET /console/api/agent-setup, local mode only; the lines come from
 * src/agents-api/connect-recipes.ts, which the README's blocks are checked against). Text only: every value
 * goes in with textContent, never as HTML.
 */

const PANEL_BLOCKS: readonly (readonly [string, string])[] = [
  ["claudeCode", "Claude Code"],
  ["claudeCodeJson", "Claude Code · .mcp.json"],
  ["codexToml", "Codex · ~/.codex/config.toml"],
  ["codexEnv", "Codex · 环境变量"],
  ["geminiJson", "Gemini CLI · ~/.gemini/settings.json"],
  ["curl", "HTTP API (curl)"],
  ["token", "Agent token"],
];

export function renderAgentPanel(doc: Document, setup: Record<string, unknown>): HTMLDetailsElement {
  const panel = doc.createElement("details");
  panel.className = "agent-panel";
  panel.dataset.testid = "agent-setup";
  const summary = doc.createElement("summary");
  summary.textContent = "连接外部 Agent（MCP）";
  panel.append(summary);
  const intro = doc.createElement("p");
  intro.className = "agent-intro";
  const allowed = Array.isArray(setup.mayAsk) ? setup.mayAsk.join(", ") : "";
  intro.textContent = `“${String(setup.agent)}”可以向 ${allowed} 提问。把下面任一段配置给你的 Agent，它就能在这里开进度卡片、提问、收到回答。`;
  panel.append(intro);
  for (const [key, title] of PANEL_BLOCKS) {
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
  host.prepend(renderAgentPanel(document, await response.json()));
}

if (typeof document !== "undefined") {
  mount().catch((error) => console.warn("agent setup panel unavailable", error));
}
