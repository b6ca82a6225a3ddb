// Moved to domain/external-sessions.ts (issue 15); re-exported so code written against the old path still builds.
export {
  type ExternalSession,
  type ExternalSessionSource,
  ExternalSessions,
} from "../domain/external-sessions.ts";
