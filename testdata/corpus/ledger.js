// ledger.js is the side effect of every corpus glue server: one JSON line per real execution of
// a tool, appended to the file LEDGER names. Lines are short single writes with O_APPEND, so
// several processes (replicas) can share one ledger. agree.js counts them per key.
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');

// execute is the tool's real work: it records the execution, takes WORK_MS (the time a real
// refund spends at the bank), and returns the answer, whose refundId is new on every execution.
async function execute(key, tool, args) {
  const refundId = 're_' + crypto.randomBytes(8).toString('hex');
  fs.appendFileSync(process.env.LEDGER, JSON.stringify({ key: key || '', tool, accountId: args.accountId, refundId, pid: process.pid }) + '\n');
  await new Promise(r => setTimeout(r, Number(process.env.WORK_MS || 20)));
  return { refundId, accountId: args.accountId, amount: args.amount };
}

module.exports = { execute };
