// Moved to domain/access.ts (issue 15); re-exported so code written against the old path still builds.
export { canViewSession, VIEW_MEMBERSHIP_MS } from "../domain/access.ts";
