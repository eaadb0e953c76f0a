"""Building what ships with the runtime: the extractor's training data converters and trainers.

Outside the runtime package on purpose: nothing under ``oprag_pipeline`` imports it, the wheel does not carry it,
and it needs the ``train`` extra (torch) plus the corpora in ``../shared/data``, which a user never has.
"""
