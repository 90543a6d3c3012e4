// A tool server built on @node-idempotency/core, as its express and nestjs plugins use it:
// onRequest() before the handler (a stored response is answered as is, a key in progress or
// reused with another body is refused), onResponse() after it. STORE=memory uses
// @node-idempotency/storage-adapter-memory, STORE=redis @node-idempotency/storage-adapter-redis
// at REDIS_ADDR, under the cache key prefix PREFIX. POST /tools/{tool} with the key in
// Idempotency-Key.
'use strict';
const path = require('node:path');
const express = require('express');
const { Idempotency, IdempotencyError } = require('@node-idempotency/core');
const { execute } = require(path.join(__dirname, 'ledger.js'));

// The status codes of draft-ietf-httpapi-idempotency-key-header for the library's refusals.
const refusal = { REQUEST_IN_PROGRESS: 409, IDEMPOTENCY_FINGERPRINT_MISSMATCH: 422, IDEMPOTENCY_KEY_MISSING: 400, IDEMPOTENCY_KEY_LEN_EXEEDED: 400 };

async function main() {
  let storage;
  if (process.env.STORE === 'redis') {
    const { RedisStorageAdapter } = require('@node-idempotency/storage-adapter-redis');
    storage = new RedisStorageAdapter({ url: 'redis://' + process.env.REDIS_ADDR });
    await storage.connect();
  } else {
    const { MemoryStorageAdapter } = require('@node-idempotency/storage-adapter-memory');
    storage = new MemoryStorageAdapter();
  }
  const idempotency = new Idempotency(storage, { cacheKeyPrefix: process.env.PREFIX || 'node-idempotency', cacheTTLMS: 600000 });
  const app = express();
  app.use(express.json());
  app.get('/healthz', (req, res) => res.send('ok'));
  app.post('/tools/:tool', async (req, res) => {
    const request = { headers: req.headers, path: req.path, method: req.method, body: req.body };
    let stored;
    try {
      stored = await idempotency.onRequest(request);
    } catch (err) {
      if (!(err instanceof IdempotencyError)) throw err;
      return res.status(refusal[err.code] || 400).json({ error: err.message, code: err.code });
    }
    if (stored) {
      return res.status(200).set('Idempotent-Replayed', 'true').json(stored.body);
    }
    const body = await execute(req.get('idempotency-key'), req.params.tool, req.body);
    await idempotency.onResponse(request, { body });
    res.json(body);
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
}
main();
