#!/usr/bin/env bash
# npm test: every suite, on a fresh machine of CI's kind. Installs what the suites need when
# it is missing (apt packages and the code-server test editor, via test/setup/ensure-deps.sh),
# lints and type-checks, builds and packages the extension, then runs unit, webview (the built panels in Chromium),
# integration, grammar, extension (inside code-server) and end-to-end (Chromium) tests. Stops
# at the first failing stage. An end-to-end file that fails is run once more and, if it then
# passes, named as FLAKY in the output (see test/harness/run-node-tests.mjs for why).
set -euo pipefail
cd "$(dirname "$0")/.."

stage() { printf '\n\033[1m== %s\033[0m\n' "$*"; stage_started=$(date +%s); }
done_stage() { printf '   (%ss)\n' "$(( $(date +%s) - stage_started ))"; }
started=$(date +%s)

stage "dependencies (test/setup/ensure-deps.sh)"
export CODE_SERVER_BIN="$(bash test/setup/ensure-deps.sh)"
done_stage

stage "lint and format (typescript-eslint, Prettier: npm run lint)"
npm run -s lint; done_stage

stage "type check (the tests, then each runtime: trainer, extension, webview)"
npm run -s typecheck; done_stage

stage "build and package (.vsix)"
node .build/package-vsix.mjs >/dev/null
node .build/build.mjs   # the test bundles, unminified
done_stage

stage "unit tests"
node test/harness/run-node-tests.mjs test/unit; done_stage

stage "webview tests (built panels in Chromium)"
node test/harness/run-node-tests.mjs test/webview; done_stage

stage "integration tests"
node test/harness/run-node-tests.mjs test/integration; done_stage

stage "grammar tests (vscode-tmgrammar-test)"
npm run -s test:grammar; done_stage

stage "extension tests inside VS Code (code-server)"
npx tsx test/harness/runExtensionTests.ts; done_stage

stage "a hostile folder in Restricted Mode (code-server, Workspace Trust on)"
ROLLOUT_TEST_RESTRICTED=1 npx tsx test/harness/runExtensionTests.ts; done_stage

stage "end-to-end UI tests (code-server + Chromium)"
node test/harness/run-node-tests.mjs --retry-failed-file-once test/e2e; done_stage

printf '\nall suites passed in %ss\n' "$(( $(date +%s) - started ))"
