// Moved to domain/types.ts (issue 15); re-exported so code written against the old path still builds.
export * from "../domain/types.ts";
