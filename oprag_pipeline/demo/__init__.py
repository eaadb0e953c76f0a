"""Demo corpus generator: synthetic hotel reviews and seller-forum posts with planted opinion truth.

`generate_demo(data_dir, docs=..., seed=...)` writes `raw/<domain>/demo-NNNNN.jsonl` (the ordinary input contract)
and `truth/<domain>/{mentions.jsonl,documents.jsonl,entities.json}` (read only by tests and benchmarks), so the
whole pipeline can run and be scored without external data.
"""

from oprag_pipeline.demo.generator import DOMAINS, DemoResult, generate_demo
from oprag_pipeline.demo.truth import entities_truth, iter_jsonl

__all__ = ["DOMAINS", "DemoResult", "entities_truth", "generate_demo", "iter_jsonl"]
