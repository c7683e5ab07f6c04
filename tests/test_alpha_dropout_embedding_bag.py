"""alpha_dropout / feature_alpha_dropout and nn.EmbeddingBag options against torch:
the recorded graph (in place when asked), whole channels dropped by the feature form, its
errors, SELU statistics kept; EmbeddingBag's include_last_offset, padding_idx (normalised,
its row zero at init) and repr."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import dyngrad  # noqa: E402


def _walk(fn):
    if fn is None:
        return None
    return (fn.name().split("::")[-1],
            tuple(None if f is None else _walk(f) for f, _ in fn.next_functions))


CASES = {
    "feature": lambda L, F: F.feature_alpha_dropout(L.randn(2, 3, 4, 4, requires_grad=True),
                                                    0.5, True),
    "inplace": lambda L, F: F.alpha_dropout(L.randn(3, 4, requires_grad=True).clone(), 0.5,
                                            True, inplace=True),
    "p_one": lambda L, F: F.alpha_dropout(L.randn(3, 4, requires_grad=True), 1.0, True),
    "p_one_inplace_leaf": lambda L, F: F.alpha_dropout(L.randn(3, 4, requires_grad=True), 1.0,
                                                       True, True),
    "feature_1d": lambda L, F: F.feature_alpha_dropout(L.randn(3), 0.5, True),
    "feature_2d": lambda L, F: F.feature_alpha_dropout(L.randn(3, 4, requires_grad=True), 0.5,
                                                       True),
    "empty": lambda L, F: F.alpha_dropout(L.zeros(0, 3, requires_grad=True), 0.5, True),
    "eval": lambda L, F: F.alpha_dropout(L.randn(3, 4, requires_grad=True), 0.5, False),
}


def _outcome(L, name):
    try:
        r = CASES[name](L, L.nn.functional)
    except Exception as e:  # noqa: BLE001 - the error is the outcome
        return type(e).__name__, str(e).split("\n")[0]
    return _walk(r.grad_fn), tuple(r.shape)


@pytest.mark.parametrize("name", list(CASES))
def test_alpha_dropout_matches_torch(name):
    assert _outcome(dyngrad, name) == _outcome(torch, name)


def test_inplace_returns_the_input():
    a = dyngrad.randn(3, 4)
    assert dyngrad.nn.functional.alpha_dropout(a, 0.5, True, inplace=True) is a


def test_feature_form_drops_whole_channels():
    y = dyngrad.nn.functional.feature_alpha_dropout(dyngrad.ones(4, 6, 3, 3), 0.5, True)
    per_channel = y.numpy().reshape(4, 6, 9)
    assert (per_channel == per_channel[..., :1]).all()


def test_selu_statistics_are_kept():
    y = dyngrad.nn.functional.alpha_dropout(dyngrad.randn(400000), 0.3, True).numpy()
    assert abs(y.mean()) < 0.01 and abs(y.std() - 1) < 0.01


@pytest.mark.parametrize("kw", [dict(include_last_offset=True),
                                dict(include_last_offset=True, padding_idx=-2, max_norm=1.0,
                                     norm_type=1.0, scale_grad_by_freq=True, mode="sum"),
                                dict(mode="max", padding_idx=4)])
def test_embedding_bag_module_matches_torch(kw):
    tm = torch.nn.EmbeddingBag(10, 3, **kw)
    dm = dyngrad.nn.EmbeddingBag(10, 3, **kw)
    assert repr(dm) == repr(tm) and dm.padding_idx == tm.padding_idx
    if tm.padding_idx is not None:
        assert not dm.weight.detach().numpy()[dm.padding_idx].any()
    dm.weight.data = dyngrad.tensor(tm.weight.detach().numpy())
    got = dm(dyngrad.tensor([1, 2, 4, 5, 4, 3, 2, 9]), dyngrad.tensor([0, 3, 5, 8]))
    exp = tm(torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 5, 8]))
    np.testing.assert_allclose(got.detach().numpy(), exp.detach().numpy(), rtol=1e-6, atol=1e-7)


def test_embedding_bag_padding_idx_out_of_range():
    for L in (torch, dyngrad):
        with pytest.raises(AssertionError, match="padding_idx must be within num_embeddings"):
            L.nn.EmbeddingBag(10, 3, padding_idx=10)
