// Verifies a delivery from hookbox the way a merchant's receiver would: with
// the Standard Webhooks library and with Svix's, both pinned in this
// folder's lock file. Imported by dest-node.mjs; run directly, it reads one
// JSON object a line on stdin ({"secret", "headers", "body_b64"}) and writes
// the verdicts one a line, for dest-python.py.
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';

function attempt(f) {
  try {
    f();
    return 'ok';
  } catch (e) {
    return String(e && e.message || e);
  }
}

// verdicts checks body (a Buffer) and headers (lower-case names) with both
// libraries. svix reads svix-* before webhook-*; svix_names checks the svix-*
// set alone (absent when the request has none), so that a destination
// configured with signature_headers = "svix" proves those names carry a
// valid signature by themselves.
export function verdicts(secret, headers, body) {
  const out = {
    std: attempt(() => new StandardWebhook(secret).verify(body, headers, { jsonParse: false })),
    svix: attempt(() => new SvixWebhook(secret).verify(body, headers)),
    svix_names: 'absent',
  };
  if (headers['svix-id'] !== undefined) {
    const only = {};
    for (const [k, v] of Object.entries(headers)) {
      if (!k.startsWith('webhook-')) only[k] = v;
    }
    out.svix_names = attempt(() => new SvixWebhook(secret).verify(body, only));
  }
  return out;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const rl = createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    let v;
    try {
      const m = JSON.parse(line);
      v = verdicts(m.secret, m.headers, Buffer.from(m.body_b64, 'base64'));
    } catch (e) {
      v = { std: 'bad input: ' + e.message, svix: 'bad input', svix_names: 'absent' };
    }
    process.stdout.write(JSON.stringify(v) + '\n');
  });
}
