// An Express tool server instrumented with the OpenTelemetry JS SDK (@opentelemetry/sdk-node,
// the http and express instrumentations, the OTLP/HTTP protobuf exporter), for idemtest audit's
// test on telemetry from a real npm stack. POST /tools/{tool} with the key in Idempotency-Key.
//
// MODE=idempotent puts express-idempotency (its in-process store) in front of the route; MODE=naive
// is BROKEN on purpose: it looks the key up, executes, then stores the answer, so concurrent
// duplicates both execute. Each real execution appends a line to LEDGER (ledger.js: the truth,
// counted apart from the spans) inside a refund.execute span, a child of the HTTP server span.
// The spans go to OTEL_EXPORTER_OTLP_TRACES_ENDPOINT; SIGTERM flushes them, then exits.
// Prints "listening on http://127.0.0.1:PORT" to stderr once it serves.
'use strict';
const path = require('node:path');
const { NodeSDK } = require('@opentelemetry/sdk-node');
const { HttpInstrumentation } = require('@opentelemetry/instrumentation-http');
const { ExpressInstrumentation } = require('@opentelemetry/instrumentation-express');
const { OTLPTraceExporter } = require('@opentelemetry/exporter-trace-otlp-proto');

const sdk = new NodeSDK({
  serviceName: 'express-refunds',
  traceExporter: new OTLPTraceExporter(),
  instrumentations: [
    // The key header is captured on the server span: http.request.header.idempotency-key.
    new HttpInstrumentation({ headersToSpanAttributes: { server: { requestHeaders: ['idempotency-key'] } } }),
    // The route names the call (http.route); Express's own layer spans are left out, so that
    // refund.execute is a child of the server span.
    new ExpressInstrumentation({ ignoreLayersType: ['middleware', 'router', 'request_handler'] }),
  ],
});
sdk.start();

// Required after sdk.start(), so that the instrumentations patch them.
const express = require('express');
const { trace } = require('@opentelemetry/api');
const { idempotency, getSharedIdempotencyService } = require('express-idempotency');
const { execute } = require(path.join(__dirname, '..', 'corpus', 'ledger.js'));

const tracer = trace.getTracer('express-refunds');

function executeTraced(key, tool, args) {
  return tracer.startActiveSpan('refund.execute', async span => {
    try {
      return await execute(key, tool, args);
    } finally {
      span.end();
    }
  });
}

const app = express();
app.use(express.json());
if (process.env.MODE === 'idempotent') {
  app.post('/tools/:tool', idempotency(), async (req, res) => {
    if (getSharedIdempotencyService().isHit(req)) {
      return; // the middleware answered with the stored response, or a 409
    }
    res.json(await executeTraced(req.get('idempotency-key'), req.params.tool, req.body));
  });
} else {
  const done = new Map();
  app.post('/tools/:tool', async (req, res) => {
    const key = req.get('idempotency-key');
    if (key && done.has(key)) {
      return res.json(done.get(key));
    }
    const answer = await executeTraced(key, req.params.tool, req.body);
    if (key) {
      done.set(key, answer);
    }
    res.json(answer);
  });
}

const server = app.listen(0, '127.0.0.1', () => {
  process.stderr.write(`listening on http://127.0.0.1:${server.address().port}\n`);
});
process.on('SIGTERM', () => {
  server.close();
  sdk.shutdown().finally(() => process.exit(0));
});
