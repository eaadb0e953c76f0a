#!/usr/bin/env bash
# The whole test suite (sets up .venv first when needed). Extra arguments go to pytest: `-m "not slow" -n 2` is the
# fast tier on two worker processes. The full suite (CI) stays in one process: its end-to-end runs, subprocess kills
# and lock races are the tests a second busy worker on a 2-core machine would slow past their deadlines.
source "$(dirname "$0")/_env.sh"
# The `oprag serve` browser test drives Debian's chromium (a test tool's own browser download is unreachable here):
# install it where this machine can (root with apt), else that one test skips and says why.
if ! command -v chromium >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing chromium for the browser test" >&2
  { apt-get update -qq && apt-get install -y -qq chromium chromium-driver; } >/dev/null 2>&1 \
    || echo "chromium could not be installed: the browser test will skip" >&2
fi
# The Celery executor test starts Debian's redis-server as its broker: installed the same way, else it skips.
if ! command -v redis-server >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "==> installing redis-server for the Celery executor test" >&2
  { apt-get update -qq && apt-get install -y -qq redis-server; } >/dev/null 2>&1 \
    || echo "redis-server could not be installed: the Celery executor test will skip" >&2
fi
export DAGSTER_HOME="$(mktemp -d)"
ruff check oprag_pipeline oprag_pipeline_tests benchmarks
exec pytest "$@"
