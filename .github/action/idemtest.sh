#!/usr/bin/env bash
# The steps of the idemtest GitHub Action (action.yml), kept in a script so that they are tested
# here (testdata/script/action.txtar and action_test.go run it with a fake GITHUB_* environment).
#
#   idemtest.sh resolve   validate every input, then get idemtest: for a release tag (vX.Y.Z) the
#                         release binary, verified against the release's checksums.txt; for any
#                         other ref, say that it is built from source (action.yml then sets up Go
#                         with its build cache). Writes artifact=, build= to $GITHUB_OUTPUT.
#   idemtest.sh run       validate again, build idemtest if resolve did not download it, run `run`
#                         and/or `check` with the inputs, every report into INPUT_REPORTS, and
#                         exit with the worst exit code. idemtest itself writes the job summary
#                         ($GITHUB_STEP_SUMMARY) and the annotations.
#   idemtest.sh           both, one after the other (for running it by hand).
#
# Nothing is written, downloaded or built before every input has been validated: a bad input is
# one ::error:: (exit 2), with what the user wrote escaped so that it cannot end the workflow
# command or start another.
set -uo pipefail

phase=${1:-all}
case "$phase" in resolve | run | all) ;; *)
	echo "usage: idemtest.sh [resolve|run]" >&2
	exit 2
	;;
esac

# escape_data is s as the message of a workflow command: %, CR and LF encoded, so that a value
# with a newline cannot start a command of its own.
escape_data() {
	local s=${1//%/%25}
	s=${s//$'\r'/%0D}
	printf '%s' "${s//$'\n'/%0A}"
}

# escape_property is s as a property of a workflow command (title=...): : and , encoded too.
escape_property() {
	local s
	s=$(escape_data "$1")
	s=${s//:/%3A}
	printf '%s' "${s//,/%2C}"
}

fail() { # message: one ::error:: annotation, then exit 2 (bad usage, nothing done)
	echo "::error title=$(escape_property "idemtest action")::$(escape_data "idemtest action: $1")" >&2
	exit 2
}

action=${IDEMTEST_ACTION_PATH:?IDEMTEST_ACTION_PATH is not set}
reports=${INPUT_REPORTS:-idemtest-reports}
dir="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/idemtest-action"
bin="$dir/idemtest"
[ "${RUNNER_OS:-}" = Windows ] && bin="$dir/idemtest.exe"

# --- validate every input, before anything is written ------------------------------------------

# paths: one or more paths, separated by any whitespace, newlines included (a YAML `paths: |`
# block is one path a line).
paths=()
if [ -n "${INPUT_PATHS:-}" ]; then
	IFS=$' \t\r\n' read -r -d '' -a paths <<<"$INPUT_PATHS"
fi
if [ ${#paths[@]} -eq 0 ] && [ -z "${INPUT_CHECK_ENDPOINT:-}" ]; then
	fail "give paths (for idemtest run), check-endpoint (for idemtest check), or both"
fi
for v in INPUT_CHECK_ENDPOINT INPUT_CONFIG INPUT_BASELINE INPUT_CHECK_BASELINE INPUT_REPORTS; do
	case "${!v:-}" in *$'\n'* | *$'\r'*)
		name=$(printf '%s' "${v#INPUT_}" | tr 'A-Z_' 'a-z-')
		fail "$name is one value and holds a line break: ${!v}"
		;;
	esac
done
case "${INPUT_FAIL_ON:-}" in "" | new | any) ;; *) fail "fail-on must be new or any, not ${INPUT_FAIL_ON}" ;; esac
case "${INPUT_REQUIRE_COVERAGE:-false}" in true | false) ;; *)
	fail "require-coverage must be true or false, not ${INPUT_REQUIRE_COVERAGE}"
	;;
esac
[ -n "$reports" ] || fail "reports must name a directory"

# A shard K/N names the reports and the artefact after itself, so that a matrix's jobs can be
# downloaded into one directory and joined with `idemtest report merge`. At most 18 digits each:
# what both bash arithmetic and idemtest's --shard read without overflowing.
suffix=
artifact=idemtest-reports
if [ -n "${INPUT_SHARD:-}" ]; then
	if ! [[ "$INPUT_SHARD" =~ ^([1-9][0-9]{0,17})/([1-9][0-9]{0,17})$ ]] || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
		fail "shard must be K/N with 1 <= K <= N, such as 2/3, not ${INPUT_SHARD}"
	fi
	suffix="-${BASH_REMATCH[1]}-of-${BASH_REMATCH[2]}"
	artifact="idemtest-reports${suffix}"
fi

# baseline is a report of `idemtest run`, check-baseline one of `idemtest check`: each command
# compares with its own. Without paths (no run), baseline goes to check, as it always did.
run_baseline=${INPUT_BASELINE:-}
check_baseline=${INPUT_CHECK_BASELINE:-}
if [ ${#paths[@]} -eq 0 ] && [ -z "$check_baseline" ]; then
	check_baseline=$run_baseline
fi

# A release tag of the action (vX.Y.Z, or vX.Y.Z-pre): its binary is downloaded; any other ref
# (a branch, a commit, a major tag such as v1) is built from source.
ref=${IDEMTEST_ACTION_REF:-}
release=
if [[ "$ref" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
	release=$ref
fi

# --- resolve: get the binary ---------------------------------------------------------------------

sha256() { # file: its SHA-256 in hex
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum "$1" | cut -d' ' -f1
	else
		shasum -a 256 "$1" | cut -d' ' -f1
	fi
}

# download fetches the release archive for this runner and its checksums.txt, checks the
# archive's SHA-256 against the line naming it, and unpacks idemtest into $dir. Any mismatch is
# exit 2: a binary that is not the one released never runs.
download() {
	local os arch ext base url archive sums want got
	ext=tar.gz
	case "${RUNNER_OS:-$(uname -s)}" in
	Linux) os=linux ;; macOS | Darwin) os=darwin ;;
	Windows | MINGW* | MSYS* | CYGWIN*) os=windows ext=zip ;;
	*) fail "no release binary for the runner's OS ${RUNNER_OS:-$(uname -s)}: releases are built for Linux, macOS and Windows" ;;
	esac
	case "${RUNNER_ARCH:-$(uname -m)}" in
	X64 | x86_64 | amd64) arch=amd64 ;; ARM64 | arm64 | aarch64) arch=arm64 ;;
	*) fail "no release binary for the runner's architecture ${RUNNER_ARCH:-$(uname -m)}" ;;
	esac
	base="idemtest_${release#v}_${os}_${arch}.${ext}"
	url="${IDEMTEST_RELEASE_URL:-https://github.com/${IDEMTEST_ACTION_REPOSITORY:-idemtest/idemtest}/releases/download}/${release}"
	archive="$dir/$base"
	sums="$dir/checksums.txt"
	echo "::group::download idemtest ${release} (${os}/${arch})"
	rm -rf "$dir" && mkdir -p "$dir" || fail "cannot create $dir"
	curl -fsSL --retry 3 -o "$sums" "$url/checksums.txt" || fail "cannot download $url/checksums.txt"
	curl -fsSL --retry 3 -o "$archive" "$url/$base" || fail "cannot download $url/$base"
	want=$(awk -v f="$base" '$2 == f || $2 == "*" f { print $1; exit }' "$sums")
	[ -n "$want" ] || fail "checksums.txt of ${release} has no line for $base"
	got=$(sha256 "$archive")
	if [ "$got" != "$want" ]; then
		rm -f "$archive"
		fail "$base has SHA-256 $got, but checksums.txt of ${release} says $want: not running it"
	fi
	echo "$base: SHA-256 $got, as checksums.txt says"
	if [ "$ext" = zip ]; then
		unzip -o -q "$archive" idemtest.exe -d "$dir" || fail "cannot unpack $base"
	else
		tar -xzf "$archive" -C "$dir" idemtest || fail "cannot unpack $base"
	fi
	[ -x "$bin" ] || fail "$base holds no idemtest binary"
	echo "::endgroup::"
}

if [ "$phase" != run ]; then
	if [ -n "$release" ]; then
		download
	fi
	if [ -n "${GITHUB_OUTPUT:-}" ]; then
		build=true
		[ -n "$release" ] && build=false
		printf 'artifact=%s\nbuild=%s\n' "$artifact" "$build" >>"$GITHUB_OUTPUT"
	fi
fi
[ "$phase" = resolve ] && exit 0

# --- run -----------------------------------------------------------------------------------------

mkdir -p "$dir" "$reports" || fail "cannot create $reports"
if [ -n "$release" ]; then
	[ -x "$bin" ] || fail "idemtest ${release} was not downloaded (run the resolve phase first)"
else
	echo "::group::build idemtest from ${action}"
	(cd "$action" && go build -o "$bin" .) || exit 2
	echo "::endgroup::"
fi
"$bin" --version || exit 2

# Every value goes with its flag as --flag=VALUE, and the paths after --: a value or path that
# starts with - is never read as a flag.
common=()
[ -n "${INPUT_CONFIG:-}" ] && common+=("--config=$INPUT_CONFIG")
[ -n "${INPUT_SHARD:-}" ] && common+=("--shard=$INPUT_SHARD")
gate=()
[ -n "${INPUT_FAIL_ON:-}" ] && gate+=("--fail-on=$INPUT_FAIL_ON")
[ "${INPUT_REQUIRE_COVERAGE:-false}" = true ] && gate+=(--require-coverage)

worst=0
record() { [ "$1" -gt "$worst" ] && worst=$1; }

if [ ${#paths[@]} -gt 0 ]; then
	base=()
	[ -n "$run_baseline" ] && base+=("--baseline=$run_baseline")
	"$bin" run "${common[@]}" "${gate[@]}" "${base[@]}" --no-color \
		"--junit=$reports/run$suffix.xml" "--json=$reports/run$suffix.json" "--html=$reports/run$suffix.html" -- "${paths[@]}"
	record $?
fi
if [ -n "${INPUT_CHECK_ENDPOINT:-}" ]; then
	base=()
	[ -n "$check_baseline" ] && base+=("--baseline=$check_baseline")
	"$bin" check "${common[@]}" "${gate[@]}" "${base[@]}" --no-color "--endpoint=$INPUT_CHECK_ENDPOINT" \
		"--junit=$reports/check$suffix.xml" "--json=$reports/check$suffix.json"
	record $?
fi
exit "$worst"
