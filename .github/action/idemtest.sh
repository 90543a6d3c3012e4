#!/usr/bin/env bash
# The steps of the idemtest GitHub Action (action.yml), kept in a script so that they are tested
# here (testdata/script/action.txtar runs it with a fake GITHUB_* environment). It builds
# idemtest from the action's checkout, runs `run` and/or `check` with the inputs, writes every
# report into INPUT_REPORTS, and exits with the worst exit code: idemtest itself writes the job
# summary ($GITHUB_STEP_SUMMARY) and the annotations.
set -uo pipefail

action=${IDEMTEST_ACTION_PATH:?IDEMTEST_ACTION_PATH is not set}
reports=${INPUT_REPORTS:-idemtest-reports}
bin="${RUNNER_TEMP:-${TMPDIR:-/tmp}}/idemtest-action/idemtest"

if [ -z "${INPUT_PATHS:-}" ] && [ -z "${INPUT_CHECK_ENDPOINT:-}" ]; then
	echo "::error::idemtest action: give paths (for idemtest run), check-endpoint (for idemtest check), or both" >&2
	exit 2
fi
case "${INPUT_FAIL_ON:-}" in "" | new | any) ;; *)
	echo "::error::idemtest action: fail-on must be new or any, not ${INPUT_FAIL_ON}" >&2
	exit 2
	;;
esac
case "${INPUT_REQUIRE_COVERAGE:-false}" in true | false) ;; *)
	echo "::error::idemtest action: require-coverage must be true or false, not ${INPUT_REQUIRE_COVERAGE}" >&2
	exit 2
	;;
esac

# A shard K/N names the reports and the artefact after itself, so that a matrix's jobs can be
# downloaded into one directory and joined with `idemtest report merge`.
suffix=
artifact=idemtest-reports
if [ -n "${INPUT_SHARD:-}" ]; then
	if ! [[ "$INPUT_SHARD" =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] || [ "${BASH_REMATCH[1]}" -gt "${BASH_REMATCH[2]}" ]; then
		echo "::error::idemtest action: shard must be K/N with 1 <= K <= N, such as 2/3, not ${INPUT_SHARD}" >&2
		exit 2
	fi
	suffix="-${BASH_REMATCH[1]}-of-${BASH_REMATCH[2]}"
	artifact="idemtest-reports${suffix}"
fi
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	echo "artifact=${artifact}" >>"$GITHUB_OUTPUT"
fi

echo "::group::build idemtest from ${action}"
mkdir -p "$(dirname "$bin")" "$reports"
(cd "$action" && go build -o "$bin" .) || exit 2
"$bin" --version
echo "::endgroup::"

common=()
[ -n "${INPUT_CONFIG:-}" ] && common+=(--config "$INPUT_CONFIG")
gate=()
[ -n "${INPUT_BASELINE:-}" ] && gate+=(--baseline "$INPUT_BASELINE")
[ -n "${INPUT_FAIL_ON:-}" ] && gate+=(--fail-on "$INPUT_FAIL_ON")
[ "${INPUT_REQUIRE_COVERAGE:-false}" = true ] && gate+=(--require-coverage)
[ -n "${INPUT_SHARD:-}" ] && common+=(--shard "$INPUT_SHARD")

worst=0
record() { [ "$1" -gt "$worst" ] && worst=$1; }

if [ -n "${INPUT_PATHS:-}" ]; then
	# Paths are split on whitespace, as the input documents.
	read -r -a paths <<<"$INPUT_PATHS"
	"$bin" run "${common[@]}" "${gate[@]}" --no-color \
		--junit "$reports/run$suffix.xml" --json "$reports/run$suffix.json" --html "$reports/run$suffix.html" "${paths[@]}"
	record $?
fi
if [ -n "${INPUT_CHECK_ENDPOINT:-}" ]; then
	"$bin" check "${common[@]}" "${gate[@]}" --no-color --endpoint "$INPUT_CHECK_ENDPOINT" \
		--junit "$reports/check$suffix.xml" --json "$reports/check$suffix.json"
	record $?
fi
exit "$worst"
