/**
 * Preloaded into a child process by tests: on SIGUSR2, a promise rejects with nobody to catch it, as a bug
 * deep in a dependency would. Node 20 ends the process for that unless a guard is installed.
 */
process.on("SIGUSR2", () => {
  void Promise.reject(new Error("injected unhandled rejection"));
});
