import fs from "node:fs";
import path from "node:path";
import { exampleCards } from "../src/cards/examples.ts";
import { validateCard } from "../src/cards/rules.ts";
import { checkCard } from "../src/local/emulator/card-checker/index.ts";

/** `npm run cards`: writes every example card state to cards/<name>.json (the golden files). */
const dir = path.resolve(import.meta.dirname, "..", "cards");
fs.mkdirSync(dir, { recursive: true });
for (const file of fs.readdirSync(dir)) if (file.endsWith(".json")) fs.rmSync(path.join(dir, file));
for (const [name, card] of Object.entries(exampleCards())) {
  const check = validateCard(card);
  if (!check.ok) {
    process.stderr.write(`${name} breaks the card rules:\n  ${check.problems.join("\n  ")}\n`);
    process.exitCode = 1;
  }
  // The emulator's independent checker too: a golden card Feishu would refuse is no golden card.
  const verdict = checkCard(card);
  if (!verdict.ok) {
    process.stderr.write(`${name} is refused by the emulator's card checker:\n  ${verdict.summary}\n`);
    process.exitCode = 1;
  }
  fs.writeFileSync(path.join(dir, `${name}.json`), `${JSON.stringify(card, null, 2)}\n`);
  process.stdout.write(`cards/${name}.json\n`);
}
