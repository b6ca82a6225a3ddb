import { runSuite } from "./suite.ts";

/** The entry point of `npm run bench` (see suite.ts): exits with the suite's verdict. */
runSuite(process.argv.slice(2), process.env).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);
