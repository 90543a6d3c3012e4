// agree.js compares what idemtest said with what a corpus member really did. The member's glue
// appends one JSON line per real execution of a tool to a ledger file ({"key": ..., ...}); this
// script counts those lines per idempotency key, independently of idemtest, and prints one line
// per verdict: what idemtest said, the truth, and "agree" or "DISAGREE".
//
//   node agree.js check REPORT.json LEDGER   a check --json report
//   node agree.js run REPORT.json LEDGER     a run --json report: every trial of every scenario
//
// A key executed more than once is a double execution: idemtest must say ✗ (check: a failed
// cell that blames the key, by name with the ledger's count or by its session; run: the trial
// that used the key failed, on a double-execution verdict or on an assertion of the effects).
// Every key executed at most once: idemtest must not fail (check: pass, warn or inconclusive;
// run: the trial passed). The exit code is 1 when a line disagrees. The checks judged must be
// ones whose ✗ is about executions (replay, lost-response, timeout-retry, concurrent): a
// payload-mismatch ✗ for a replayed answer is true and would read here as a false alarm.
'use strict';
const fs = require('node:fs');

const [mode, reportFile, ledgerFile] = process.argv.slice(2);
const report = JSON.parse(fs.readFileSync(reportFile, 'utf8'));
const executions = new Map();
const ledger = fs.existsSync(ledgerFile) ? fs.readFileSync(ledgerFile, 'utf8') : '';
for (const line of ledger.split('\n')) {
  if (!line.trim()) continue;
  const { key } = JSON.parse(line);
  if (key) executions.set(key, (executions.get(key) || 0) + 1);
}
if (executions.size === 0) {
  // Nothing recorded proves nothing: a glue that never wrote its ledger is not a correct server.
  console.log(`DISAGREE: the ledger ${ledgerFile} records no execution`);
  process.exit(1);
}
const most = keys => Math.max(0, ...keys.map(k => executions.get(k) || 0));
let disagreements = 0;
const say = (what, double, failed, truth) => {
  const ok = double === failed;
  if (!ok) disagreements++;
  console.log(`${what}; truth: ${truth}: ${ok ? 'agree' : 'DISAGREE'}`);
};

if (mode === 'check') {
  // Every key the ledger shows executed more than once must be blamed by a ✗ cell: by name
  // ("key K executed N times", with the count the ledger has) or through the session of the
  // calls the cell lists (keys are SESSION-INDEX). A ✗ cell must blame a key the ledger shows
  // executed more than once; with no such key, no cell may be ✗.
  const doubles = [...executions].filter(([, n]) => n > 1).map(([k]) => k);
  const blamed = new Set();
  for (const tool of report.tools) {
    for (const cell of tool.cells) {
      if (cell.status === 'skip') continue;
      if (cell.status !== 'fail') {
        say(`${tool.tool} ${cell.check}: idemtest ${cell.status}`, false, false, 'no double execution blamed on it');
        continue;
      }
      const text = (cell.details || []).join('\n');
      const named = [...text.matchAll(/key (\S+) executed (\d+) times/g)];
      const sessions = [...text.matchAll(/calls \(session ([0-9a-f]+)\)/g)].map(m => m[1]);
      let real = 0;
      for (const [, key, n] of named) {
        blamed.add(key);
        const got = executions.get(key) || 0;
        if (got !== Number(n)) {
          disagreements++;
          console.log(`${tool.tool} ${cell.check}: idemtest fail, key executed ${n} times; truth: the ledger has ${got}: DISAGREE`);
        }
        real = Math.max(real, got);
      }
      for (const s of sessions) {
        blamed.add(s);
        real = Math.max(real, ...doubles.filter(k => k.startsWith(s + '-')).map(k => executions.get(k)));
      }
      say(`${tool.tool} ${cell.check}: idemtest fail`, real > 1, true, real > 1 ? `a key it blames executed ${real} times` : 'no key it blames executed twice');
    }
  }
  // A report of one check whose cell is ? said it could not tell: a key executed twice under it
  // is not a false green (a ✓ is), though a ✗ would have been better.
  const judged = report.tools.flatMap(t => t.cells.filter(c => c.status !== 'skip'));
  const unknown = judged.length === 1 && judged[0].status === 'inconclusive';
  for (const k of doubles) {
    if (blamed.has(k) || blamed.has(k.split('-')[0])) continue;
    if (unknown) {
      console.log(`key ${k}: idemtest ? (${judged[0].check}: it cannot tell); truth: executed ${executions.get(k)} times: agree (not a ✓)`);
      continue;
    }
    say(`key ${k}: no ✗ blames it`, true, false, `executed ${executions.get(k)} times`);
  }
  console.log(`truth: ${executions.size} keys executed, ${doubles.length} of them more than once`);
} else if (mode === 'run') {
  for (const s of report.scenarios) {
    let trials = 0, doubles = 0, failed = 0, wrong = 0;
    const how = new Set();
    for (const h of s.history || []) {
      const failure = h.failure || (s.failed_trial === h.index ? s.failure : undefined);
      const keys = [...new Set((h.calls || []).map(c => c.key).filter(Boolean))];
      const double = most(keys) > 1;
      trials++;
      if (double) doubles++;
      if (!h.passed) {
        failed++;
        // A double execution shows in the answers (a double-execution verdict) or in the state
        // (an assertion on the declared effects, which the saved scenarios carry).
        if (failure) how.add(failure.violation || failure.kind);
      }
      // A trial that executed a key twice must fail; any other trial must pass: a failure
      // there is a false alarm.
      if (double === h.passed) wrong++;
    }
    if (wrong) disagreements++;
    const by = how.size ? ` (${[...how].sort().join(', ')})` : '';
    console.log(`${s.name}: idemtest ${s.status}, ${failed} of ${trials} trials failed${by}; truth: ${doubles} trials executed a key more than once: ${wrong ? 'DISAGREE on ' + wrong + ' trials' : 'agree'}`);
  }
} else {
  console.error('usage: node agree.js check|run REPORT LEDGER');
  process.exit(2);
}
process.exit(disagreements ? 1 : 0);
