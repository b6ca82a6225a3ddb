import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { exampleCards } from "../src/cards/examples.ts";
import { validateCard } from "../src/cards/rules.ts";

const dir = path.resolve(import.meta.dirname, "..", "cards");
const examples = exampleCards();

describe("golden cards", () => {
  it("has one file in cards/ per example and no stale files (run `npm run cards` after a change)", () => {
    const files = fs
      .readdirSync(dir)
      .filter((file) => file.endsWith(".json"))
      .sort();
    expect(files).toEqual(
      Object.keys(examples)
        .map((name) => `${name}.json`)
        .sort(),
    );
  });

  it.each(Object.entries(examples))("%s matches its golden file and passes the card rules", (name, card) => {
    const golden: unknown = JSON.parse(fs.readFileSync(path.join(dir, `${name}.json`), "utf8"));
    expect(card, `cards/${name}.json is out of date: run npm run cards`).toEqual(golden);
    expect(validateCard(golden)).toMatchObject({ ok: true });
  });
});
