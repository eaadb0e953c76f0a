"""The joint aspect encoding: all aspects of a window in one sequence, each read at its own marker."""

from __future__ import annotations

import numpy as np
import pytest

from oprag_pipeline.enrich.aspect_model import (
    CLS_ID,
    SEP_ID,
    AspectEncoder,
    AspectItem,
    joint_window_key,
    pad_joint,
)


@pytest.fixture(scope="module")
def encoder() -> AspectEncoder:
    return AspectEncoder.from_dir()


def item(text: str, term: str, nth: int = 0) -> AspectItem:
    start = -1
    for _ in range(nth + 1):
        start = text.index(term, start + 1)
    return AspectItem(text, start, start + len(term))


def tokens(encoder: AspectEncoder, ids: list[int]) -> list[str]:
    return [encoder.tokenizer.id_to_token(i) for i in ids]


def test_aspects_of_one_sentence_share_one_sequence(encoder: AspectEncoder) -> None:
    text = "The pasta was great but the service was slow."
    (group,) = encoder.encode_joint([item(text, "service"), item(text, "pasta")])
    toks = tokens(encoder, group.ids)
    assert group.ids[0] == CLS_ID and group.ids[-1] == SEP_ID and group.first_len == len(group.ids)
    assert toks.count("<") == 2 and toks.count(">") == 2
    # anchors point at each aspect's opening marker, followed by the aspect's own word; members keep input order
    by_member = dict(zip(group.members, group.anchors, strict=True))
    assert toks[by_member[0]] == "<" and toks[by_member[0] + 1] == "service"
    assert toks[by_member[1]] == "<" and toks[by_member[1] + 1] == "pasta"
    assert sorted(group.members) == [0, 1]


def test_aspects_of_different_sentences_are_separate_sequences(encoder: AspectEncoder) -> None:
    text = "The pasta was great and very fresh. The service was slow and the waiter rude."
    groups = encoder.encode_joint([item(text, "pasta"), item(text, "service"), item(text, "waiter")])
    members = sorted(tuple(sorted(g.members)) for g in groups)
    assert members == [(0,), (1, 2)]


def test_overlapping_aspects_are_scored_apart(encoder: AspectEncoder) -> None:
    text = "The room service was slow but friendly."
    groups = encoder.encode_joint([item(text, "room service"), item(text, "service")])
    assert len(groups) == 2
    assert all(tokens(encoder, g.ids).count("<") == 1 for g in groups)


def test_a_window_too_long_for_every_marker_falls_back_to_one_aspect_per_sequence() -> None:
    short = AspectEncoder.from_dir(max_context=12)
    text = "The pasta and the bread and the wine and the cheese were all " + "very " * 20 + "good."
    groups = short.encode_joint([item(text, "pasta"), item(text, "cheese")])
    assert len(groups) == 2
    for g in groups:
        toks = tokens(short, g.ids)
        assert len(g.ids) <= 12 + 2 and toks[g.anchors[0]] == "<"


def test_categories_are_trailing_segments(encoder: AspectEncoder) -> None:
    text = "Lovely food, shame about the bill."
    (group,) = encoder.encode_joint([AspectItem(text, category="food"), AspectItem(text, category="price")])
    toks = tokens(encoder, group.ids)
    assert [toks[a] for a in group.anchors] == ["food", "price"]
    assert group.ids[group.first_len - 1] == SEP_ID and group.first_len < group.anchors[0] + 1
    feeds = pad_joint([group])
    assert feeds["token_type_ids"][0, : group.first_len].sum() == 0
    assert feeds["token_type_ids"][0, group.first_len :].all()


def test_pad_joint_lists_every_anchor_with_its_row(encoder: AspectEncoder) -> None:
    a = "The pasta was great but the service was slow."
    b = "Cheap rooms."
    groups = encoder.encode_joint([item(a, "pasta"), item(a, "service"), item(b, "rooms")])
    feeds = pad_joint(groups)
    width = max(len(g.ids) for g in groups)
    assert feeds["input_ids"].shape == (len(groups), width)
    assert feeds["anchor_batch"].tolist() == [r for r, g in enumerate(groups) for _ in g.anchors]
    assert feeds["anchor_index"].tolist() == [x for g in groups for x in g.anchors]
    np.testing.assert_array_equal(feeds["attention_mask"].sum(axis=1), [len(g.ids) for g in groups])


def test_the_cache_key_names_every_marked_aspect() -> None:
    assert joint_window_key([(4, 9, "pasta")]) != joint_window_key([(4, 9, "pasta"), (28, 35, "service")])


def first_word_graph() -> bytes:
    """A stand-in joint graph with the real model's five inputs: each anchor's logits are (id, 0, -id) of the token
    after its marker, so a test can see which aspect each output row belongs to."""
    from onnx import TensorProto, helper

    i64 = TensorProto.INT64
    inputs = [
        helper.make_tensor_value_info("input_ids", i64, ["batch", "seq"]),
        helper.make_tensor_value_info("attention_mask", i64, ["batch", "seq"]),
        helper.make_tensor_value_info("token_type_ids", i64, ["batch", "seq"]),
        helper.make_tensor_value_info("anchor_index", i64, ["anchors"]),
        helper.make_tensor_value_info("anchor_batch", i64, ["anchors"]),
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["anchors", 3])
    nodes = [
        helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", i64, [], [1])),
        helper.make_node("Constant", [], ["axis1"], value=helper.make_tensor("axis1", i64, [1], [1])),
        helper.make_node("Add", ["anchor_index", "one"], ["next"]),
        helper.make_node("Unsqueeze", ["anchor_batch", "axis1"], ["rows"]),
        helper.make_node("Unsqueeze", ["next", "axis1"], ["cols"]),
        helper.make_node("Concat", ["rows", "cols"], ["where"], axis=1),
        helper.make_node("GatherND", ["input_ids", "where"], ["word"]),
        helper.make_node("Cast", ["word"], ["w"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["w", "axis1"], ["col"]),
        helper.make_node("Sub", ["col", "col"], ["zero"]),
        helper.make_node("Neg", ["col"], ["neg"]),
        helper.make_node("Concat", ["col", "zero", "neg"], ["logits"], axis=1),
    ]
    graph = helper.make_graph(nodes, "first_word", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def test_the_runtime_maps_each_joint_output_row_to_its_aspect(encoder: AspectEncoder) -> None:
    import onnxruntime as ort

    from oprag_pipeline.enrich.aspect_model import AspectSentimentModel

    session = ort.InferenceSession(first_word_graph(), providers=["CPUExecutionProvider"])
    model = AspectSentimentModel(session, encoder, workers=2)
    assert model.joint
    a = "The pasta was great but the service was slow."
    b = "Cheap rooms, noisy street."
    items = [item(a, "service"), item(b, "street"), item(a, "pasta"), item(b, "rooms")]
    first = model.logits(items)
    expected = [encoder.tokenizer.token_to_id(w) for w in ("service", "street", "pasta", "rooms")]
    assert first[:, 0].tolist() == expected
    np.testing.assert_array_equal(model.logits(items), first)  # served from the cache, same rows
    model._cache.clear()
    np.testing.assert_array_equal(model.logits(list(reversed(items))), first[::-1])


def test_the_head_features_leave_the_logits_as_they_were() -> None:
    import onnxruntime as ort

    from oprag_pipeline.enrich.aspect_model import MODEL_DIR, MODEL_FILE, AspectSentimentModel

    model = AspectSentimentModel.load(threads=1)
    text = "The pasta was great but the service was slow."
    items = [item(text, "pasta"), item(text, "service")]
    assert model.exposes_features and model.features(items).shape == (2, 768)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    plain = AspectSentimentModel(ort.InferenceSession(str(MODEL_DIR / MODEL_FILE), options), model.encoder, workers=1)
    assert not plain.exposes_features
    np.testing.assert_array_equal(model.logits(items), plain.logits(items))


def test_a_residual_head_learns_a_direction_that_offsets_cannot() -> None:
    """Labels that follow one feature's sign: three offsets can only learn the class shares (half and half), the
    residual head learns the direction, on data it was not fitted on too; without information it stays near zero."""
    from oprag_pipeline.enrich.aspect_model import softmax
    from oprag_pipeline.enrich.calibration import fit_label_bias, fit_residual_head

    for seed in range(3):
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(600, 32))
        y = np.where(x[:, 5] > 0, 2, 0)
        flat = np.full((600, 3), 1 / 3)
        w, b = fit_residual_head(x[:400], flat[:400], y[:400])
        head_acc = (softmax(np.log(flat[400:]) + x[400:] @ w + b).argmax(1) == y[400:]).mean()
        bias = fit_label_bias(flat[:400], y[:400])
        offsets_acc = (softmax(np.log(flat[400:]) + bias).argmax(1) == y[400:]).mean()
        assert head_acc > 0.9 > 0.6 > offsets_acc
        noise = fit_residual_head(x[:400], flat[:400], rng.integers(0, 3, 400))
        assert np.abs(noise[0]).max() < np.abs(w).max() / 3
    empty_w, empty_b = fit_residual_head(np.zeros((0, 4)), np.zeros((0, 3)), [])
    assert empty_w.shape == (4, 3) and not empty_w.any() and not empty_b.any()
