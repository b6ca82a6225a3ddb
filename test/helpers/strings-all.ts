export { bilingual, catalogues, zh } from "../../src/strings.ts";
export { en } from "../../src/strings-en.ts";
