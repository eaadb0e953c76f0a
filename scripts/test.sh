#!/usr/bin/env bash
# The whole test suite (sets up .venv first when needed). Extra arguments go to pytest.
source "$(dirname "$0")/_env.sh"
export DAGSTER_HOME="$(mktemp -d)"
ruff check oprag_pipeline oprag_pipeline_tests benchmarks
exec pytest "$@"
