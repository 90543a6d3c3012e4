// A tool server built on express-idempotency (VilledeMontreal), as its README shows: the
// middleware in front of the route, isHit() to leave a replayed request alone. STORE=memory
// uses the library's default in-process store; STORE=redis uses express-idempotency-redis-adapter
// at REDIS_ADDR. POST /tools/{tool} with the key in Idempotency-Key.
'use strict';
const path = require('node:path');
const express = require('express');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const { execute } = require(path.join(__dirname, 'ledger.js'));

async function main() {
  const options = {};
  if (process.env.STORE === 'redis') {
    const RedisAdapter = require('express-idempotency-redis-adapter').default;
    // ttl (seconds) is the adapter's own option: the keys a test leaves expire.
    options.dataAdapter = new RedisAdapter({ connectionConfig: { url: 'redis://' + process.env.REDIS_ADDR }, ttl: 600 });
    await options.dataAdapter.connect();
  }
  const app = express();
  app.use(express.json());
  app.get('/healthz', (req, res) => res.send('ok'));
  app.post('/tools/:tool', idempotency(options), async (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) {
      return; // the middleware answered with the stored response, or a 409 / 417
    }
    res.json(await execute(req.get('idempotency-key'), req.params.tool, req.body));
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
}
main();
