// A destination for hookbox's interoperability tests (interop_dest_test.go):
// Node's own http module, as a merchant's small app runs it, on 127.0.0.1.
//
//   node dest-node.mjs --log FILE --secret whsec_... [--answer chunked|length|early]
//                      [--keep-alive MS]
//
// --answer chunked answers res.writeHead(200); res.end('ok'): no
// Content-Length, so Node sends Transfer-Encoding: chunked; length sets
// Content-Length; early answers chunked as soon as the request's header
// has come, before its body is read. --keep-alive sets server.keepAliveTimeout (Node's default,
// 5 s, when absent). It prints "listening PORT" on stdout when ready.
//
// Every request is checked with standardwebhooks and svix (verify.mjs) and
// written to the log as one JSON line when its answer has ended (the
// response's 'finish'): arrival and end in milliseconds of this process's
// clock, body size, the verdicts, the connection it came on. A closed
// connection is a line too ({"kind":"close"}), so a test can wait for the
// server to drop an idle connection rather than sleep. A request whose
// X-Hookbox-Event-Id begins with "gate" is logged on arrival
// ({"kind":"held"}) and answered only when the next line arrives on stdin:
// the test queues a burst behind it.
import http from 'node:http';
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { verdicts } from './verify.mjs';

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
if (!args.log || !args.secret) {
  console.error('usage: dest-node.mjs --log FILE --secret whsec_... [--answer chunked|length|early] [--keep-alive MS]');
  process.exit(2);
}
const answer = args.answer || 'chunked';
const log = fs.openSync(args.log, 'a');
const now = () => performance.timeOrigin + performance.now();
// One synchronous append a line: the test reads whole lines as they come.
const record = (r) => fs.writeSync(log, JSON.stringify(r) + '\n');

// Each line on stdin answers the requests held so far.
const held = [];
createInterface({ input: process.stdin }).on('line', () => {
  for (const f of held.splice(0)) f();
});

let conns = 0;
const server = http.createServer((req, res) => {
  const arrive = now();
  const event = req.headers['x-hookbox-event-id'] || '';
  const r = {
    kind: 'req', event, id: req.headers['webhook-id'] || '', svix_id: req.headers['svix-id'] || '',
    attempt: req.headers['x-hookbox-attempt'] || '', idempotency_key: req.headers['idempotency-key'] || '',
    conn: req.socket.hookboxConn, arrive,
  };
  // The line is written once both the answer has ended and the body has
  // been read (in that order with --answer early).
  let pending = 2;
  const done = () => { if (--pending === 0) record(r); };
  const send = () => {
    res.on('finish', () => { r.end = now(); done(); });
    if (answer === 'length') {
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 2 });
    } else {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
    }
    res.end('ok');
  };
  const answerNow = () => {
    if (event.startsWith('gate')) {
      record({ kind: 'held', event, arrive });
      held.push(send);
    } else {
      send();
    }
  };
  if (answer === 'early') answerNow(); // before a byte of the body is read, as a fire-and-forget receiver does
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    Object.assign(r, { size: body.length }, verdicts(args.secret, req.headers, body));
    if (answer !== 'early') answerNow();
    done();
  });
});
server.on('connection', (s) => {
  s.hookboxConn = ++conns;
  s.on('close', () => record({ kind: 'close', conn: s.hookboxConn, end: now() }));
});
if (args['keep-alive']) server.keepAliveTimeout = Number(args['keep-alive']);
server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
