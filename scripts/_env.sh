# Sourced by the other scripts: creates .venv and installs the project when missing or when pyproject.toml changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON_BIN="${PYTHON:-}"
if [ -z "$PYTHON_BIN" ]; then
  for candidate in python3 python3.11 python3.12 python3.13; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c "import sys; sys.exit(sys.version_info < (3, 11))" 2>/dev/null; then
      PYTHON_BIN="$candidate"; break
    fi
  done
fi
[ -n "$PYTHON_BIN" ] || { echo "oprag needs Python >= 3.11 (set PYTHON=/path/to/python)" >&2; exit 1; }
STAMP=".venv/.oprag-installed"
WANT="$(cat pyproject.toml | sha256sum | cut -c1-16)"
if [ ! -x .venv/bin/python ] || [ "$(cat "$STAMP" 2>/dev/null)" != "$WANT" ]; then
  echo "==> setting up .venv with $PYTHON_BIN (first run or dependencies changed)" >&2
  [ -x .venv/bin/python ] || "$PYTHON_BIN" -m venv .venv
  .venv/bin/python -m pip install --quiet --upgrade pip 2>&1 | grep -v "is ignored" >&2 || true
  .venv/bin/python -m pip install --quiet -e ".[dev]" 2>&1 | grep -v -e "is ignored" -e "^\s*$" >&2 || true
  .venv/bin/python -c "import oprag_pipeline, dagster, duckdb" || { echo "installation failed" >&2; exit 1; }
  echo "$WANT" > "$STAMP"
fi
export PATH="$ROOT/.venv/bin:$PATH"
export DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/data/dagster_home}"
export OPRAG_MODEL_DIR="${OPRAG_MODEL_DIR:-$ROOT/data/models}"
mkdir -p "$DAGSTER_HOME"
