"""dyngrad.testing against torch.testing: assert_close raises the same exception type with the
same text for the same inputs (values, shapes, dtypes, NaN, scalars against tensors, nested
containers, tolerances, ``msg``), and make_tensor gives tensors of the same dtype, shape,
layout and flags, with values in PyTorch's ranges, and the same errors."""
import collections
import warnings

import numpy as np
import pytest

import dyngrad

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")


def _close_cases(T):
    tc, t = T.testing.assert_close, T.tensor
    return {
        "values": lambda: tc(t([1., 2., 3.]), t([1., 2.5, 3.])),
        "values_2d": lambda: tc(t([[1., 2.], [3., 4.]]), t([[1., 2.], [3.1, 4.5]])),
        "float64_close": lambda: tc(t([1., 2.], dtype=T.float64), t([1., 2.0000001], dtype=T.float64)),
        "float64": lambda: tc(t([1., 2.], dtype=T.float64), t([1., 2.00001], dtype=T.float64)),
        "float16": lambda: tc(t([1., 2.], dtype=T.float16), t([1., 2.1], dtype=T.float16)),
        "float32_digits": lambda: tc(t([0.1, 0.2, 0.3]), t([0.1, 0.25, 0.3])),
        "int64": lambda: tc(t([1, 2, 3]), t([1, 5, 3])),
        "int8": lambda: tc(t([1, 2, 3], dtype=T.int8), t([1, -120, 3], dtype=T.int8)),
        "uint8": lambda: tc(t([1, 2, 3], dtype=T.uint8), t([1, 250, 3], dtype=T.uint8)),
        "int_zero_expected": lambda: tc(t([1, 2]), t([1, 0])),
        "bool": lambda: tc(t([True, False]), t([True, True])),
        "complex64": lambda: tc(t([1 + 1j, 2]), t([1 + 1j, 2 + 1j])),
        "complex128": lambda: tc(t([1 + 1j], dtype=T.complex128), t([1 + 1.5j], dtype=T.complex128)),
        "complex_nan": lambda: tc(t([complex(NAN, 0)]), t([complex(NAN, 0)])),
        "complex_nan_equal": lambda: tc(t([complex(NAN, 0)]), t([complex(NAN, 0)]), equal_nan=True),
        "complex_zero_expected": lambda: tc(t([1 + 1j]), t([0j])),
        "zero_dim_float": lambda: tc(t(1.), t(2.)),
        "zero_dim_int": lambda: tc(t(1), t(2)),
        "zero_dim_bool": lambda: tc(t(True), t(False)),
        "shape": lambda: tc(t([1., 2.]), t([1., 2., 3.])),
        "shape_empty": lambda: tc(t([]), T.zeros(0, 2)),
        "empty": lambda: tc(t([]), t([])),
        "dtype": lambda: tc(t([1., 2.]), t([1., 2.], dtype=T.float64)),
        "dtype_int_float": lambda: tc(t([1, 2]), t([1., 2.])),
        "dtype_unchecked": lambda: tc(t([1., 2.]), t([1., 2.5], dtype=T.float64), check_dtype=False),
        "dtype_unchecked_int": lambda: tc(t([1, 2]), t([1., 2.5]), check_dtype=False),
        "dtype_unchecked_bool": lambda: tc(t([True, False]), t([1, 1]), check_dtype=False),
        "nan": lambda: tc(t([1., NAN]), t([1., NAN])),
        "nan_equal": lambda: tc(t([1., NAN]), t([1., NAN]), equal_nan=True),
        "nan_against_number": lambda: tc(t([1., NAN]), t([1., 2.]), equal_nan=True),
        "inf_signs": lambda: tc(t([1., INF]), t([1., -INF])),
        "inf_equal": lambda: tc(t([1., INF]), t([1., INF])),
        "inf_against_number": lambda: tc(t([INF, 1.]), t([2., 1.])),
        "zero_expected": lambda: tc(t([1., 2.]), t([1., 0.])),
        "signed_zero": lambda: tc(t([0.0]), t([-0.0])),
        "tiny_exact": lambda: tc(t([1e-30, 1.]), t([2e-30, 1.]), rtol=0, atol=0),
        "within_default": lambda: tc(t([1., 2.]), t([1., 2. + 1e-6])),
        "many": lambda: tc(T.arange(12.).reshape(3, 4), T.arange(12.).reshape(3, 4) * 1.5),
        "ties_first_index": lambda: tc(T.arange(1000.),
                                       T.arange(1000.) + (T.arange(1000.) % 7 == 0).float()),
        "tolerances": lambda: tc(t([1., 2.]), t([1., 2.5]), rtol=0.1, atol=0.1),
        "tolerances_pass": lambda: tc(t([1., 2.]), t([1., 2.1]), rtol=0.1, atol=0.0),
        "tolerances_zero": lambda: tc(t([1., 2.]), t([1., 2.5]), rtol=0, atol=0),
        "int_tolerances": lambda: tc(t([1, 2]), t([1, 3]), rtol=0.1, atol=0.5),
        "int_tolerances_pass": lambda: tc(t([10, 2]), t([11, 2]), rtol=0.1, atol=0),
        "rtol_only": lambda: tc(t([1.]), t([1.]), rtol=1e-3),
        "atol_only": lambda: tc(t([1.]), t([1.]), atol=1e-3),
        "atol_only_nested": lambda: tc([t([1.])], [t([1.])], atol=1e-3),
        "py_float": lambda: tc(1.0, 1.5),
        "py_float_close": lambda: tc(1.0, 1.0 + 1e-9),
        "py_int": lambda: tc(1, 3),
        "py_int_zero_expected": lambda: tc(1, 0),
        "py_int_float": lambda: tc(1, 1.0),
        "py_int_float_unchecked": lambda: tc(1, 1.0, check_dtype=False),
        "py_complex": lambda: tc(1 + 2j, 1 + 3j),
        "py_nan": lambda: tc(NAN, NAN),
        "py_nan_equal": lambda: tc(NAN, NAN, equal_nan=True),
        "py_inf": lambda: tc(INF, INF),
        "py_exact": lambda: tc(1.0, 1.5, rtol=0, atol=0),
        "py_bool": lambda: tc(True, False),
        "py_bool_same": lambda: tc(False, False),
        "py_bool_int": lambda: tc(True, 1),
        "np_bool": lambda: tc(np.bool_(True), False),
        "np_scalar": lambda: tc(np.float32(1.), np.float32(1.5)),
        "np_scalar_int": lambda: tc(np.int32(1), 2),
        "none": lambda: tc(None, 1),
        "none_both": lambda: tc(None, None),
        "scalar_vs_tensor": lambda: tc(1.0, t(1.0)),
        "tensor_vs_scalar": lambda: tc(t(1.0), 1.0),
        "list_vs_tensor": lambda: tc([1., 2.], t([1., 2.])),
        "tensor_vs_list": lambda: tc(t([1, 2]), [1, 2]),
        "ndarray_vs_tensor": lambda: tc(np.array([1., 2.]), t([1., 2.])),
        "ndarrays": lambda: tc(np.array([1., 2.]), np.array([1., 2.5])),
        "ndarrays_float32": lambda: tc(np.array([1., 2.], np.float32), np.array([1., 2.5], np.float32)),
        "ndarrays_shape": lambda: tc(np.zeros(2), np.zeros(3)),
        "list": lambda: tc([t([1.]), t([2.])], [t([1.]), t([3.])]),
        "list_length": lambda: tc([1, 2], [1, 2, 3]),
        "tuple_vs_list": lambda: tc((t([1.]), 2), [t([1.]), 3]),
        "nested": lambda: tc({"a": [t([1.]), {"b": t([2., 3.])}]},
                             {"a": [t([1.]), {"b": t([2., 4.])}]}),
        "nested_ok": lambda: tc({"a": [t([1.]), (1, 2.0, None)]}, {"a": [t([1.]), [1, 2.0, None]]}),
        "nested_shape": lambda: tc([[t([1.])]], [[t([1., 2.])]]),
        "mapping_keys": lambda: tc({"a": 1, "b": 2}, {"a": 1, "c": 2}),
        "mapping_mixed_keys": lambda: tc({"a": 1, 2: 2}, {"a": 1}),
        "ordered_dict": lambda: tc(collections.OrderedDict(a=t([1.])), {"a": t([1.5])}),
        "first_failure_only": lambda: tc([1, t([1.]), 3], [2, t([2.]), 4]),
        "scalars_in_list": lambda: tc([1.0, t(2.)], [1.0, t(3.)]),
        "str": lambda: tc("a", "b"),
        "str_same": lambda: tc("a", "a"),
        "sequence_vs_str": lambda: tc(["a"], "a"),
        "set": lambda: tc({1, 2}, {1, 3}),
        "object": lambda: tc(object(), object()),
        "msg_string": lambda: tc(t([1.]), t([2.]), msg="custom"),
        "msg_callable": lambda: tc(t([1.]), t([2.]), msg=lambda m: f"H\n{m}\nF"),
        "msg_callable_nested": lambda: tc([t([1.])], [t([2.])], msg=lambda m: f"H\n{m}\nF"),
        "msg_string_shape": lambda: tc(t([1.]), t([2., 3.]), msg="custom"),
        "msg_string_type_error": lambda: tc(1.0, t(1.0), msg="custom"),
        "parameter_strict": lambda: tc(T.nn.Parameter(t([1.])), t([1.]), allow_subclasses=False),
        "parameter": lambda: tc(T.nn.Parameter(t([1.])), t([1.5])),
        "stride": lambda: tc(t([[1., 2.], [3., 4.]]).t(), t([[1., 3.], [2., 4.]]), check_stride=True),
        "stride_unchecked": lambda: tc(t([[1., 2.], [3., 4.]]).t(), t([[1., 3.], [2., 4.]])),
        "requires_grad_ignored": lambda: tc(t([1.], requires_grad=True), t([1.])),
        "allclose": lambda: T.testing.assert_allclose(t([1., 2.]), [1., 2.1]),
        "allclose_close": lambda: T.testing.assert_allclose(t([1., 2.]), [1., 2.00001]),
        "allclose_msg": lambda: T.testing.assert_allclose(t([1., 2.]), [1., 3.], msg="mm"),
        "allclose_int": lambda: T.testing.assert_allclose(t([1, 2]), [1, 3]),
        "allclose_nan": lambda: T.testing.assert_allclose(t([NAN]), [NAN]),
        "allclose_dtypes": lambda: T.testing.assert_allclose(t([1., 2.]), t([1., 2.5], dtype=T.float64)),
        "allclose_float16": lambda: T.testing.assert_allclose(t([1.], dtype=T.float16), [1.01]),
        "allclose_float64": lambda: T.testing.assert_allclose(t([1.], dtype=T.float64), [1.0001]),
        "allclose_scalars": lambda: T.testing.assert_allclose(1.0, 1.5),
        "allclose_shape": lambda: T.testing.assert_allclose(t([1.]), [1., 2.]),
        "allclose_rtol_only": lambda: T.testing.assert_allclose(t([1.]), [1.5], rtol=0.1),
        "bool_tolerances": lambda: tc(t([True, False]), t([False, False]), rtol=0.5, atol=0.5),
        "bool_tolerances_fail": lambda: tc(t([True, False]), t([False, False]), rtol=0.1, atol=0.1),
        "uint8_tolerance_wraps": lambda: tc(t([1, 200], dtype=T.uint8), t([3, 199], dtype=T.uint8),
                                            rtol=0, atol=1),
        "int64_large_tolerance": lambda: tc(t([10 ** 9]), t([10 ** 9 + 100]), rtol=1e-8, atol=0),
        "float16_tolerances": lambda: tc(t([1., 2.], dtype=T.float16), t([1.01, 2.], dtype=T.float16),
                                         rtol=1e-3, atol=1e-3),
        "float16_float32": lambda: tc(t([1., 2.], dtype=T.float16), t([1.01, 2.]), check_dtype=False),
        "complex_float_unchecked": lambda: tc(t([1 + 0j]), t([1.5]), check_dtype=False),
        "int32_float64_unchecked": lambda: tc(t([1, 2], dtype=T.int32), t([1., 2.5], dtype=T.float64),
                                              check_dtype=False),
        "tuple_key": lambda: tc({(1, 2): t([1.])}, {(1, 2): t([2.])}),
        "negative_values": lambda: tc(t([-1., -2.]), t([-1., -3.])),
        "large_values": lambda: tc(t([1e30]), t([2e30])),
        "np_int_vs_int": lambda: tc(np.int64(3), 4),
        "float_vs_np_float32": lambda: tc(1.0, np.float32(1.5)),
    }


CASES = sorted(_close_cases(torch))


def _outcome(T, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            _close_cases(T)[name]()
        except Exception as e:  # noqa: BLE001 - the outcome is compared
            return type(e).__name__, str(e)
    return None


@pytest.mark.parametrize("name", CASES)
def test_assert_close_matches_torch(name):
    assert _outcome(dyngrad, name) == _outcome(torch, name)


def test_default_dtype_float64_divides_integers_in_float64():
    for T in (torch, dyngrad):
        T.set_default_dtype(T.float64)
    try:
        assert _outcome(dyngrad, "int64") == _outcome(torch, "int64")
    finally:
        for T in (torch, dyngrad):
            T.set_default_dtype(T.float32)


def test_failure_is_raised_without_internal_chain():
    with pytest.raises(AssertionError) as e:
        dyngrad.testing.assert_close(dyngrad.tensor([1.]), dyngrad.tensor([2.]))
    assert e.value.__cause__ is None and e.value.__suppress_context__


def test_bool_against_int_chains_the_key_error_as_pytorch():
    with pytest.raises(RuntimeError) as e:
        dyngrad.testing.assert_close(True, 1)
    assert isinstance(e.value.__cause__, KeyError)


def test_assert_allclose_is_deprecated_with_pytorch_warning():
    with pytest.warns(FutureWarning) as w_d:
        dyngrad.testing.assert_allclose(dyngrad.tensor([1.]), [1.])
    with pytest.warns(FutureWarning) as w_t:
        torch.testing.assert_allclose(torch.tensor([1.]), [1.])
    assert str(w_d[0].message) == str(w_t[0].message)


def test_namespace():
    assert dyngrad.testing.assert_close.__name__ == "assert_close"
    for name in ("assert_close", "assert_allclose", "make_tensor"):
        assert hasattr(dyngrad.testing, name) and hasattr(torch.testing, name)
    assert "testing" in dir(dyngrad)


# ---- make_tensor --------------------------------------------------------------------------

def _make_cases(T):
    mk = T.testing.make_tensor

    def m(*shape, **kw):
        kw.setdefault("device", "cpu")
        return mk(*shape, **kw)
    return {
        "float32": lambda: m(3, 4, dtype=T.float32),
        "shape_tuple": lambda: m((3, 4), dtype=T.float64),
        "shape_list": lambda: m([2, 3], dtype=T.int64),
        "shape_size": lambda: m(T.Size([2, 3]), dtype=T.int64),
        "zero_dim": lambda: m((), dtype=T.float32),
        "bool": lambda: m(5, dtype=T.bool),
        "requires_grad": lambda: m(3, dtype=T.float32, requires_grad=True),
        "requires_grad_complex": lambda: m(3, dtype=T.complex64, requires_grad=True),
        "requires_grad_int": lambda: m(3, dtype=T.int32, requires_grad=True),
        "requires_grad_bool": lambda: m(3, dtype=T.bool, requires_grad=True),
        "noncontiguous": lambda: m(3, 4, dtype=T.float32, noncontiguous=True),
        "noncontiguous_int": lambda: m(2, 3, dtype=T.int16, noncontiguous=True),
        "noncontiguous_one_element": lambda: m(1, 1, dtype=T.float32, noncontiguous=True),
        "noncontiguous_and_format": lambda: m(1, 2, 3, 4, dtype=T.float32, noncontiguous=True,
                                              memory_format=T.channels_last),
        "channels_last": lambda: m(2, 3, 4, 5, dtype=T.float32, memory_format=T.channels_last),
        "low_above_high": lambda: m(3, dtype=T.float32, low=2, high=1),
        "low_equals_high_int": lambda: m(3, dtype=T.int64, low=2, high=2),
        "low_equals_high_float": lambda: m(3, dtype=T.float32, low=2, high=2),
        "nan_bound": lambda: m(3, dtype=T.float32, low=NAN),
        "outside_uint8": lambda: m(3, dtype=T.uint8, low=-5, high=-1),
        "outside_int8": lambda: m(3, dtype=T.int8, low=200, high=300),
        "no_device": lambda: mk(3, dtype=T.float32),
        "no_dtype": lambda: mk(3, device="cpu"),
        "huge_int64": lambda: m(3, dtype=T.int64, low=-2 ** 70, high=2 ** 70),
        "huge_float16": lambda: m(3, dtype=T.float16, low=-1e9, high=1e9),
        "full_float64": lambda: m(3, dtype=T.float64, low=-1e308, high=1e308),
        "negative_size": lambda: m(-1, dtype=T.float32),
    }


MAKE_CASES = sorted(_make_cases(torch))


def _made(T, name):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = _make_cases(T)[name]()
        except Exception as e:  # noqa: BLE001 - the outcome is compared
            return type(e).__name__, str(e)
    return (str(r.dtype), tuple(r.shape), r.requires_grad, r.is_leaf, r.is_contiguous(),
            tuple(r.stride()), [(x.category.__name__, str(x.message)) for x in w])


@pytest.mark.parametrize("name", MAKE_CASES)
def test_make_tensor_matches_torch(name):
    assert _made(dyngrad, name) == _made(torch, name)


_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
           "complex64", "complex128"]


def _parts(x):
    a = x.detach().numpy()
    return [a.real, a.imag] if np.iscomplexobj(a) else [a]


@pytest.mark.parametrize("dtype", _DTYPES)
def test_make_tensor_default_range(dtype):
    x = dyngrad.testing.make_tensor(4000, dtype=getattr(dyngrad, dtype), device="cpu")
    ref = torch.testing.make_tensor(4000, dtype=getattr(torch, dtype), device="cpu")
    assert str(x.dtype) == str(ref.dtype)
    for got, want in zip(_parts(x), _parts(ref)):
        if dtype == "bool" or "int" in dtype:   # every value of the range is drawn, no other
            assert set(np.unique(got)) == set(np.unique(want))
        else:
            assert -9 <= got.min() and got.max() < 9
            assert got.min() < -8.5 and got.max() > 8.5
            assert len(np.unique(got)) > (2000 if dtype == "float16" else 3000)


@pytest.mark.parametrize("dtype", _DTYPES)
def test_make_tensor_given_range_and_exclude_zero(dtype):
    dg = getattr(dyngrad, dtype)
    low, high = (0, 2) if dtype == "bool" else (0, 3)
    x = dyngrad.testing.make_tensor(3000, dtype=dg, device="cpu", low=low, high=high,
                                    exclude_zero=True)
    ref = torch.testing.make_tensor(3000, dtype=getattr(torch, dtype), device="cpu", low=low,
                                    high=high, exclude_zero=True)
    for got, want in zip(_parts(x), _parts(ref)):
        assert got.min() >= 0 and got.max() < high
        if dtype == "bool" or "int" in dtype:
            assert set(np.unique(got)) == set(np.unique(want)) == set(range(1, high))
    assert (x.numpy() != 0).all()


def test_make_tensor_exclude_zero_uses_the_smallest_normal(monkeypatch):
    from dyngrad.testing import _creation

    class _Zeros:
        def uniform(self, low, high, size):
            return np.zeros(size)
    monkeypatch.setattr(_creation, "rng", _Zeros)
    for name in ("float16", "float32", "float64", "complex64"):
        x = dyngrad.testing.make_tensor(4, dtype=getattr(dyngrad, name), device="cpu",
                                        exclude_zero=True).numpy()
        tiny = torch.finfo(getattr(torch, name)).tiny
        assert x.tolist() == [tiny] * 4


def test_make_tensor_clamps_to_the_dtype():
    for dtype, lo, hi in (("float16", -65504.0, 65504.0), ("int8", -128, 127), ("uint8", 0, 255)):
        x = dyngrad.testing.make_tensor(2000, dtype=getattr(dyngrad, dtype), device="cpu",
                                        low=-1e9, high=1e9).numpy().astype(float)
        assert np.isfinite(x).all() and lo <= x.min() and x.max() <= hi
    x = dyngrad.testing.make_tensor(100, dtype=dyngrad.float64, device="cpu", low=-1e308,
                                    high=1e308).numpy()
    assert np.isfinite(x).all() and abs(x).max() > 1e306


def test_make_tensor_empty():
    # (strides of empty tensors are not compared: dyngrad gives zeros where PyTorch gives (3, 1))
    x = dyngrad.testing.make_tensor(0, 3, dtype=dyngrad.float32, device="cpu", exclude_zero=True)
    assert tuple(x.shape) == (0, 3) and x.dtype is dyngrad.float32


def test_make_tensor_integer_bounds_are_ceiled():
    x = dyngrad.testing.make_tensor(500, dtype=dyngrad.int64, device="cpu", low=0.5, high=2.5)
    assert set(x.tolist()) == {1, 2}


def test_make_tensor_noncontiguous_values_are_a_view_of_every_other_column():
    x = dyngrad.testing.make_tensor(3, 4, dtype=dyngrad.float32, device="cpu", noncontiguous=True)
    assert x._base is not None and tuple(x._base.shape) == (3, 8)
    assert not x.is_contiguous()


def test_make_tensor_follows_the_seed():
    dyngrad.manual_seed(3)
    a = dyngrad.testing.make_tensor(5, dtype=dyngrad.float32, device="cpu")
    dyngrad.manual_seed(3)
    b = dyngrad.testing.make_tensor(5, dtype=dyngrad.float32, device="cpu")
    assert a.tolist() == b.tolist()
