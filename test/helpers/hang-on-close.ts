import http from "node:http";

/**
 * Preloaded into a child process by tests: the HTTP server's close never calls back, as a connection a
 * peer never lets go of would. The bot's graceful stop then has a step that does not end.
 */
http.Server.prototype.close = function close(this: http.Server) {
  return this;
};
