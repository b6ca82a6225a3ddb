import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { zh } from "../src/strings.ts";
import { renderStrings } from "./helpers/strings-render.ts";

// Taken from the code before the English catalogue existed: the Chinese text must never drift from it.
const before: unknown = JSON.parse(
  readFileSync(new URL("./fixtures/zh-strings.json", import.meta.url), "utf8"),
);

describe("string catalogue", () => {
  it("keeps the Chinese strings byte-identical to the snapshot taken before English was added", () => {
    expect(renderStrings(zh)).toEqual(before);
  });
});
