#!/usr/bin/env bash
# The main job: set up, generate the demo corpus if there is no input yet, materialize every asset of every
# domain, and say where the results are.
source "$(dirname "$0")/_env.sh"
if [ -z "$(find data/raw -mindepth 2 -type f 2>/dev/null | head -1)" ]; then
  echo "==> data/raw is empty: generating the demo corpus" >&2
  oprag generate-demo --docs "${OPRAG_DEMO_DOCS:-1000}"
fi
echo "==> materializing every asset of every domain" >&2
oprag run "$@"
oprag status
echo
echo "==> evaluation reports" >&2
oprag report
cat <<MSG

Results
  warehouse:  $(python -c 'from oprag_pipeline import settings; print(settings.warehouse_path())')
  vectors:    data/qdrant/ (collections <domain>.raw_kb, <domain>.entity_split_kb, <domain>.enriched_kb)
  reports:    data/reports/<domain>/report.html (and report.md, metrics.json, PNG plots)
Ask a knowledge base, e.g.:
  .venv/bin/oprag query "what do guests think of the breakfast?" --domain hotels -k 10
  .venv/bin/oprag query "is the wifi any good?" --domain hotels -k 10 --mode balanced
Ask for an answer that carries the spread of opinions:
  .venv/bin/oprag ask "what do guests think of the breakfast?" --domain hotels
Or open a page for it: .venv/bin/oprag serve, then http://127.0.0.1:8000/
Open the Dagster UI (asset lineage, runs, the sensors and the nightly re-index), then http://127.0.0.1:3000:
  DAGSTER_HOME=$DAGSTER_HOME .venv/bin/dg dev
MSG
