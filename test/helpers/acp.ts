import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { type AcpAgent, type AcpAgentOptions, createAcpAgent } from "../../src/harness/agents/acp/index.ts";
import { createLogger, type Logger } from "../../src/logger.ts";

/** The scripted ACP agent (test/fixtures/acp-agent.ts) as a child process, the way ACP_COMMAND starts one. */
export const ACP_FIXTURE = fileURLToPath(new URL("../fixtures/acp-agent.ts", import.meta.url));
/** tsx's loader by absolute URL: the child runs in the chat's workspace, where a bare `tsx` resolves to nothing. */
export const TSX_LOADER = new URL("../../node_modules/tsx/dist/loader.mjs", import.meta.url).href;

export function fixtureCommand(stateDir?: string): Pick<AcpAgentOptions, "command" | "args" | "env"> {
  return {
    command: process.execPath,
    args: ["--import", TSX_LOADER, ACP_FIXTURE],
    env: {
      PATH: process.env.PATH ?? "",
      ...(process.env.HOME ? { HOME: process.env.HOME } : {}),
      ...(stateDir ? { ACP_FIXTURE_DIR: stateDir } : {}),
    },
  };
}

export function fixtureAgent(
  options: Partial<AcpAgentOptions> & { stateDir?: string; logger?: Logger } = {},
): AcpAgent {
  const { stateDir, ...rest } = options;
  return createAcpAgent({
    ...fixtureCommand(stateDir),
    terminal: false,
    idleTimeoutMs: 30_000,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), "fpb-acp-")),
    logger: createLogger({ level: "silent" }),
    ...rest,
  });
}
