// The line protocol of the sdk-*.mjs scripts that app/cli/interop_sdk_test.go
// drives: one JSON request per line on stdin, one JSON answer per line on
// stdout, in order; {"ready":true} first, once every SDK is loaded. A
// request names its operation in "sdk"; an answer with "error" means the
// script failed (a bug of the test), never that a signature was refused.
import { createInterface } from 'node:readline';

export function serve(ops) {
  // Libraries that log (Shopify's logs its version at start) must not break the protocol.
  const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');
  console.log = console.info = console.debug = console.error;
  let chain = Promise.resolve();
  createInterface({ input: process.stdin }).on('line', (line) => {
    chain = chain.then(async () => {
      try {
        const req = JSON.parse(line);
        const op = ops[req.sdk];
        if (!op) throw new Error(`unknown sdk ${JSON.stringify(req.sdk)}`);
        out(await op(req, Buffer.from(req.body ?? '', 'base64')));
      } catch (e) {
        out({ error: String(e?.stack ?? e) });
      }
    });
  });
  out({ ready: true });
}
