#!/bin/sh
# Catch rates of `idemtest check` against the reference server's naive mode (check, execute,
# store), each run a fresh process and server (default budget 2s, fan-out 8):
#   concurrent     --work 0 and 1us: the window is the store's own latency;
#   timeout-retry  --work 0, 1us and 2ms behind --check-delay 1ms: the window opens 1 ms after
#                  the request, and a retry must reach the check inside it; list_refunds is
#                  read around it (check.snapshot), since the call given up on is never answered.
# Rows are interleaved run by run, so the noise of a shared machine hits every row alike. For
# each row: the runs that caught it (✗) and the median wall time of those runs, service start
# included. The idemtest binary is $1 (build one from main and one from a branch to compare).
# Usage: bench/checkrace/run.sh IDEMTEST [RUNS]    (from the repository root)
set -u
bin=$1
runs=${2:-20}
rows=${ROWS:-"concurrent:0:0 concurrent:1us:0 timeout-retry:0:1ms timeout-retry:1us:1ms timeout-retry:2ms:1ms"}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
go build -o "$dir/refundserver" ./examples/refundserver || exit 1
n=0
for row in $rows; do
	n=$((n + 1))
	check=${row%%:*}
	rest=${row#*:}
	work=${rest%%:*}
	delay=${rest#*:}
	cat >"$dir/c$n.yaml" <<YAML
services:
  refundserver:
    command: [$dir/refundserver, --addr, "127.0.0.1:{{ port }}", --idempotency, naive, --work, "$work", --check-delay, "$delay"]
    ready: {http: "http://127.0.0.1:{{ port }}/healthz"}
endpoints:
  refunds:
    http: {url: "http://127.0.0.1:{{ services.refundserver.port }}/tools/{tool}"}
    mutating: [issue_refund]
check:
  tools:
    issue_refund: {args: {accountId: "acct_{{ session }}", amount: 12.5}}
YAML
	if [ "$check" = timeout-retry ]; then
		# The call given up on is never answered: only the state shows that it executed too.
		cat >>"$dir/c$n.yaml" <<YAML
  snapshot:
    - {tool: list_refunds, args: {accountId: "acct_{{ session }}"}}
YAML
	fi
	: >"$dir/times$n"
	echo 0 >"$dir/caught$n"
done
i=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	n=0
	for row in $rows; do
		n=$((n + 1))
		check=${row%%:*}
		start=$(date +%s%N)
		"$bin" check --no-color --config "$dir/c$n.yaml" --endpoint refunds --tool issue_refund --only "$check" >"$dir/out" 2>&1
		rc=$?
		end=$(date +%s%N)
		if [ $rc -eq 1 ] && grep -q "^✗ issue_refund $check" "$dir/out"; then
			echo $(($(cat "$dir/caught$n") + 1)) >"$dir/caught$n"
			echo $(((end - start) / 1000000)) >>"$dir/times$n"
		elif [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
			echo "run $i, $row: idemtest exited $rc" >&2
			cat "$dir/out" >&2
		fi
	done
done
echo "| check | server | caught | median time to catch |"
echo "|---|---|---|---|"
n=0
for row in $rows; do
	n=$((n + 1))
	check=${row%%:*}
	rest=${row#*:}
	work=${rest%%:*}
	delay=${rest#*:}
	med=$(sort -n "$dir/times$n" | awk '{a[NR]=$1} END {if (NR) print a[int((NR+1)/2)] " ms"; else print "–"}')
	server="naive --work $work"
	[ "$delay" != 0 ] && server="$server --check-delay $delay"
	echo "| $check | $server | $(cat "$dir/caught$n")/$runs | $med |"
done
