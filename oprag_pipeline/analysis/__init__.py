"""Analyses beyond the reference study (its research agenda): fairness-aware retrieval, opinion drift over time and
resistance to opinion flooding.

Where it sits: after `evaluate/` in the pipeline direction. It reads the warehouse tables the earlier stages wrote
(opinions, author attributes, gold labels, question metrics) and uses the pure metrics of `evaluate/metrics.py`;
the maths live in `fairness.py`, `drift.py` and `flooding.py` (pure, unit-tested), the Dagster assets in
`assets.py` stay thin, and `section_store.py` keeps each analysis's report section in the warehouse.
"""
