"""Generation: answers that carry the spread of opinions, and how faithfully they carry it.

Retrieval (index/) finds passages; this stage turns them into an answer a person reads, and measures what that
reader ends up believing about the corpus's views (the reference study's fidelity term W(P_pop, P_reader)).

- `context.py`: retrieve and gather what an answer may rest on (passages, the corpus distribution per entity);
- `compose.py`: the offline composer (a template filled with real statistics and verbatim quotes);
- `llm_writer.py`: the same answer written by an LLM through instructor, validated against the context;
- `fidelity.py`: pure functions for W1 to the corpus, minority erasure, grounded quotes and share tolerance;
- `judge.py`: blind pairwise preference with an LLM judge;
- `assets.py`, `answers_report.py`, `web.py`: the Dagster assets, the report's answers section and `oprag serve`.
"""
