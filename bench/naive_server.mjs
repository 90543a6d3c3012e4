// A naive idempotent refund endpoint in Node.js, for the benchmark: check the key, yield to the
// event loop TURNS times (what awaiting a cache or database does), then store the key. Two
// duplicates double-execute when both reach the check before either stores.
//
//   node bench/naive_server.mjs PORT TURNS
import http from 'node:http';

const port = Number(process.argv[2] || 0);
const turns = Number(process.argv[3] || 1);
const keys = new Map();
const refunds = [];
let seq = 0;
const yieldTurn = () => new Promise((resolve) => setImmediate(resolve));

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://x');
  if (req.method === 'GET' && url.pathname === '/healthz') {
    res.end('{"status":"ok"}');
    return;
  }
  if (req.method === 'GET' && url.pathname === '/refunds') {
    const acct = url.searchParams.get('accountId');
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ refunds: refunds.filter((r) => !acct || r.accountId === acct) }));
    return;
  }
  let body = '';
  for await (const chunk of req) body += chunk;
  const key = req.headers['idempotency-key'];
  const args = JSON.parse(body || '{}');
  const stored = keys.get(key);
  if (stored) {
    res.setHeader('idempotent-replayed', 'true');
    res.end(stored);
    return;
  }
  for (let i = 0; i < turns; i++) await yieldTurn();
  const refund = { refundId: `re_${++seq}`, accountId: args.accountId, amount: args.amount };
  refunds.push(refund);
  const out = JSON.stringify(refund);
  keys.set(key, out);
  res.setHeader('content-type', 'application/json');
  res.end(out);
});
server.listen(port, '127.0.0.1', () => {
  process.stderr.write(`naive node server on ${server.address().port}\n`);
});
process.on('SIGINT', () => server.close(() => process.exit(0)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
