import type { ConfigBase } from "./config.ts";
import { AppError } from "./errors.ts";

/**
 * Where people and agents reach the bot: PUBLIC_URL when it is set, else http://localhost:<port>. With
 * PORT=0 the system picks the port at listen, so without PUBLIC_URL the address is known only then. Card
 * links, personal links, the agents' panel and the listening line ask `url()` each time they need it (never
 * a copy of config.publicUrl taken before listen, which would say `localhost:0`).
 */
export class PublicAddress {
  readonly #config: Pick<ConfigBase, "publicUrl" | "publicUrlGiven" | "port">;
  #boundPort: number | undefined;

  constructor(config: Pick<ConfigBase, "publicUrl" | "publicUrlGiven" | "port">) {
    this.#config = config;
  }

  /** The port listen bound (main.ts, once it resolves). */
  bound(port: number): void {
    this.#boundPort = port;
  }

  url(): string {
    const config = this.#config;
    if (config.publicUrlGiven) return config.publicUrl;
    if (this.#boundPort !== undefined) return `http://localhost:${this.#boundPort}`;
    // A fixed PORT is what listen binds (or the process exits), so its default is right before listen too.
    if (config.port !== 0) return config.publicUrl;
    // Only a Feishu /login racing the start could ask this early; a link to port 0 would be a dead link.
    throw new AppError("INTERNAL", "the bot has no address yet: PORT=0 gets its port when it listens");
  }
}
