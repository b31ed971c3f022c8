/** A partner's CommonJS program against the installed package (test/install.test.ts). */
const sdk = require('@partner-sync/partner-sdk');

import('./exercise.mjs')
  .then(({ exercise }) => exercise(sdk, 'cjs'))
  .then(
    (line) => console.log(line),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
