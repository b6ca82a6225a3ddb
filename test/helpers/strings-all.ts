export { bilingual, catalogues, en, zh } from "../../src/strings/index.ts";
