// A tool server built on Powertools for AWS Lambda's idempotency utility
// (@aws-lambda-powertools/idempotency), with its Redis persistence layer (CachePersistenceLayer,
// a @redis/client connection to REDIS_ADDR, records under the key prefix PREFIX). The tool's
// work is wrapped in makeIdempotent, keyed by the Idempotency-Key header of the request and
// as the utility's documentation does for a function that is not a Lambda handler.
// LAMBDA_CONTEXT=1 registers a Lambda context (30s left, as an invocation with a 30s timeout
// has): an in-progress record then locks its key until then. Without one, as outside Lambda,
// the utility warns and treats an in-progress record as an orphan it may take over.
// VALIDATE=1 turns on payload validation of the body (payloadValidationJmesPath).
// POST /tools/{tool} with the key in Idempotency-Key.
'use strict';
const path = require('node:path');
const express = require('express');
const { createClient } = require('@redis/client');
const { makeIdempotent, IdempotencyConfig } = require('@aws-lambda-powertools/idempotency');
const { IdempotencyAlreadyInProgressError, IdempotencyValidationError } = require('@aws-lambda-powertools/idempotency');
const { CachePersistenceLayer } = require('@aws-lambda-powertools/idempotency/cache');
const { execute } = require(path.join(__dirname, 'ledger.js'));

async function main() {
  const client = await createClient({ url: 'redis://' + process.env.REDIS_ADDR }).connect();
  const persistenceStore = new CachePersistenceLayer({ client });
  const config = new IdempotencyConfig({
    eventKeyJmesPath: 'key',
    payloadValidationJmesPath: process.env.VALIDATE === '1' ? 'body' : undefined,
    expiresAfterSeconds: 600,
    throwOnNoIdempotencyKey: false,
  });
  if (process.env.LAMBDA_CONTEXT === '1') {
    config.registerLambdaContext({ getRemainingTimeInMillis: () => 30000 });
  }
  const refund = makeIdempotent(async (req) => execute(req.key, req.tool, req.body), { persistenceStore, config, keyPrefix: process.env.PREFIX });

  const app = express();
  app.use(express.json());
  app.get('/healthz', (req, res) => res.send('ok'));
  app.post('/tools/:tool', async (req, res) => {
    try {
      res.json(await refund({ key: req.get('idempotency-key') || null, tool: req.params.tool, body: req.body }));
    } catch (err) {
      if (err instanceof IdempotencyAlreadyInProgressError) return res.status(409).json({ error: err.message });
      if (err instanceof IdempotencyValidationError) return res.status(422).json({ error: err.message });
      console.error(err);
      res.status(500).json({ error: String(err) });
    }
  });
  app.listen(Number(process.env.PORT), '127.0.0.1');
}
main();
