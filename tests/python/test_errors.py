"""Hostile arguments: every one is a Python exception with the engine's message, never a crash."""
import numpy as np
import pytest

import tapegrad as tg


def test_shape_mismatch_names_both_shapes():
    tape = tg.Tape()
    with pytest.raises(tg.Error, match=r"add: shapes \(2,3\) and \(4\) do not broadcast"):
        tape.constant(np.ones((2, 3))) + tape.constant(np.ones(4))


def test_matmul_inner_mismatch():
    tape = tg.Tape()
    with pytest.raises(tg.Error, match="matmul"):
        tape.constant(np.ones((2, 3))) @ tape.constant(np.ones((2, 3)))


@pytest.mark.parametrize("shape", [(1 << 40,), (1 << 31, 1 << 31, 1 << 31), (-1, 3), (1, 1, 1, 1, 1)])
def test_huge_negative_or_deep_shapes_are_refused(shape):
    with pytest.raises(tg.Error, match="shape"):
        tg.Tensor.zeros(shape)


def test_wrong_types_are_type_errors():
    tape = tg.Tape()
    with pytest.raises(TypeError):
        tape.constant("not an array")
    with pytest.raises(TypeError):
        tape.param(None)
    with pytest.raises(TypeError):
        tg.nn.Linear("3", 4)
    with pytest.raises(TypeError):
        tape.constant(np.ones(2)) + "x"
    with pytest.raises(TypeError):
        tg.optim.AdamW(None)


def test_optimizer_refuses_what_is_not_a_parameter():
    with pytest.raises(tg.Error, match="expected tapegrad.Parameter objects, got int"):
        tg.optim.AdamW([1, 2])
    with pytest.raises(tg.Error, match="no parameters"):
        tg.optim.SGD([])
    p = tg.Parameter("w", np.ones(2))
    with pytest.raises(tg.Error, match="lr must be a finite number"):
        tg.optim.AdamW([p], lr=float("nan"))


def test_vars_of_two_tapes_do_not_mix():
    a, b = tg.Tape(), tg.Tape()
    with pytest.raises(tg.Error, match="different tapes"):
        a.constant(np.ones(2)) + b.constant(np.ones(2))


def test_bad_targets_and_ids():
    tape = tg.Tape()
    logits = tape.constant(np.zeros((2, 3)))
    with pytest.raises(tg.Error, match="integer"):
        tg.cross_entropy(logits, np.array([0.5, 1.0]))
    with pytest.raises(tg.Error, match="out of range"):
        tg.cross_entropy(logits, np.array([0, -1]))
    with pytest.raises(tg.Error):
        tg.cross_entropy(logits, np.array([0, 3]))  # a class the logits do not have
    emb = tg.nn.Embedding(5, 4)
    with pytest.raises(tg.Error):
        emb(tape, np.array([[1, 7]]))


def test_settings_errors_name_the_setting():
    with pytest.raises(tg.SettingError, match="no setting 'dimm'"):
        tg.lm.TrainConfig(dimm=3)
    with pytest.raises(ValueError, match="norm"):
        tg.lm.TrainConfig(norm="batchnorm")
    with pytest.raises(tg.Error, match="lr"):
        tg.lm.TrainConfig(lr=-1.0).validate()
    with pytest.raises(tg.Error, match="does not fit in 64 bits"):
        tg.lm.TrainConfig(steps=1 << 70)
    with pytest.raises(tg.Error, match="not a setting value"):
        tg.lm.TrainConfig(steps={"a": 1})


def test_item_needs_one_element():
    tape = tg.Tape()
    with pytest.raises(tg.Error, match="exactly one element"):
        tape.constant(np.ones(3)).item()


def test_parameter_value_assignment_keeps_its_shape():
    p = tg.Parameter("w", np.ones((2, 2)))
    with pytest.raises(tg.Error, match="shape"):
        p.value = np.ones(3)
