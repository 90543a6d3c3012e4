// redis_clean.js deletes what a corpus test left in Redis at REDIS_ADDR: for each argument
// LEDGER[=PREFIX], the idempotency keys the ledger file recorded, each under PREFIX (nothing:
// the store uses the key as it came); for prefix:PREFIX, every key that starts with PREFIX (a
// prefix unique to the test's run, for stores that hash the key). Only this run's keys go.
'use strict';
const fs = require('node:fs');
const { createClient } = require('@redis/client');

async function main() {
  const client = createClient({ url: 'redis://' + (process.env.REDIS_ADDR || '127.0.0.1:6379') });
  await client.connect();
  let n = 0;
  for (const arg of process.argv.slice(2)) {
    if (arg.startsWith('prefix:')) {
      const match = arg.slice('prefix:'.length).replace(/[*?[\]\\]/g, '\\$&') + '*';
      for await (const keys of client.scanIterator({ MATCH: match, COUNT: 100 })) {
        for (const k of [].concat(keys)) n += await client.del(k);
      }
      continue;
    }
    const [file, prefix = ''] = arg.split(/=(.*)/s);
    if (!fs.existsSync(file)) continue;
    const keys = fs.readFileSync(file, 'utf8').split('\n').filter(l => l.trim()).map(l => JSON.parse(l).key).filter(Boolean);
    for (const k of new Set(keys)) n += await client.del(prefix + k);
  }
  await client.quit();
  console.log(`deleted ${n} keys`);
}
main();
