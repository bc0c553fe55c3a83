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


def test_a_module_the_machine_cannot_hold_is_an_error_not_the_oom_killer():
    # 2^34 weights (64 GiB): refused before a page is touched, by the allocator every buffer uses.
    with pytest.raises(tg.Error, match=r"cannot allocate 65536 MiB: .*\(90 % of this machine.s memory\)"):
        tg.nn.Linear(1 << 17, 1 << 17)
    with pytest.raises(tg.Error, match="cannot allocate"):
        tg.nn.Embedding(1 << 34, 1)
    tg.nn.Linear(4, 3)  # and nothing stays counted: the next one is built


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
    # Each id said as the array holds it: an unsigned id past 2^63 is not shown wrapped to a negative.
    with pytest.raises(tg.Error, match=r"id 9223372036854775808 at position 1 is out of range \[0, 2\^31\)"):
        tg.cross_entropy(logits, np.array([0, 2**63], dtype=np.uint64))
    with pytest.raises(tg.Error, match=r"id 4294967295 at position 0 is out of range"):
        emb(tape, np.array([[2**32 - 1]], dtype=np.uint32))


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


SMALL = dict(dim=32, heads=2, layers=1, ctx=16, batch=2, steps=2, eval_every=0, eval_iters=1, threads=1)


def test_files_are_written_without_following_links(tmp_path):
    """A checkpoint written over a symlink replaces the link, never the file it points to."""
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "model.safetensors").symlink_to(victim)
    t = tg.lm.Trainer(tg.lm.TrainConfig(**SMALL))
    t.train_step()
    t.save(str(ckpt))
    assert victim.read_text() == "keep me"
    assert not (ckpt / "model.safetensors").is_symlink()
    assert tg.lm.Trainer.resume(str(ckpt)).step == 1


def test_special_files_and_hostile_names_are_errors_not_hangs(tmp_path):
    import os
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    t = tg.lm.Trainer(tg.lm.TrainConfig(**SMALL))
    t.save(str(ckpt))
    (ckpt / "checkpoint.json").unlink()
    os.mkfifo(ckpt / "checkpoint.json")  # a reader that opened it would wait forever
    with pytest.raises(tg.Error, match="checkpoint.json"):
        tg.lm.Trainer.resume(str(ckpt))
    # Names with shell syntax and parent references are just names: nothing runs, nothing escapes.
    odd = tmp_path / "a; touch PWNED $(touch PWNED2) .." / "run"
    result = tg.lab.sweep(str(odd), axes={"norm": ["none"], "lr": [1e-3], "seed": [1]}, plots=True,
                          dim=32, heads=2, layers=1, ctx=16, batch=2, steps=2, eval_iters=1)
    assert len(result.records) == 1 and os.path.exists(os.path.join(str(odd), "report.md"))
    assert not any(p.name.startswith("PWNED") for p in tmp_path.rglob("*")) and not os.path.exists("PWNED")
    with pytest.raises(tg.Error):
        tg.lm.Trainer(tg.lm.TrainConfig(**SMALL), text=None).save(str(victim_dir_file(tmp_path)))


def victim_dir_file(tmp_path):
    f = tmp_path / "a_file"
    f.write_text("x")
    return f / "sub"  # a checkpoint folder under a regular file


def test_no_silent_cast_into_a_float32_tape():
    # A float64 array of arbitrary values is refused, naming the first value and the fix; values
    # float32 holds exactly (lists of halves, integers, float32 into Tape64) convert without a word.
    tape = tg.Tape()
    x = np.array([[0.5, 0.1]])
    with pytest.raises(tg.Error, match=r"Tape.constant: a float64 array whose values float32 cannot hold exactly "
                                       r"\(the first: 0.10000000000000001 at flat index 1\); convert it yourself "
                                       r"\(x.astype\(np.float32\)\) or use tapegrad.Tape64 for float64"):
        tape.constant(x)
    np.testing.assert_array_equal(tape.constant(x.astype(np.float32)).numpy(), x.astype(np.float32))
    np.testing.assert_array_equal(tape.constant(np.array([0.5, -2.0, 3.0])).numpy(), [0.5, -2.0, 3.0])
    np.testing.assert_array_equal(tape.constant(np.arange(6).reshape(2, 3)).numpy(), np.arange(6).reshape(2, 3))
    with pytest.raises(tg.Error, match="int64 array whose values float32 cannot hold exactly"):
        tape.constant(np.array([2 ** 24 + 1]))
    with pytest.raises(tg.Error, match="Parameter: a float64 array"):
        tg.Parameter("w", np.random.default_rng(0).standard_normal((2, 2)))
    np.testing.assert_array_equal(tg.Tape64().constant(np.float32([0.1])).numpy(), np.float32([0.1]).astype(np.float64))


def test_integer_arguments_take_numpys_integers_and_refuse_bools_and_overflow_by_name():
    tape = tg.Tape()
    x = tape.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(x[np.int64(1)].numpy(), x[1].numpy())  # np.argmax & co. return these
    np.testing.assert_array_equal(x[np.int32(-1), np.uint8(2)].numpy(), 10.0)  # row 2, column 2
    with pytest.raises(TypeError, match=r"Var\[\.\.\.\]: indices are ints and slices, got bool \(numpy reads a bool"):
        x[True]  # numpy: a mask (shape (1, 3, 4)), never row 1
    with pytest.raises(tg.Error, match=r"Var\[\.\.\.\]: 9223372036854775808 does not fit in 64 bits"):
        x[2**63]
    assert x.reshape(np.int64(4), -1).shape == (4, 3) and x.reshape(np.array([2, 6])).shape == (2, 6)
    with pytest.raises(TypeError, match="Var.reshape dims: expected an integer, got float"):
        x.reshape([1.5, 8])
    with pytest.raises(TypeError, match="Var.reshape dims: expected an integer or a sequence of integers, got str"):
        x.reshape("34")
    with pytest.raises(tg.Error, match="Var.reshape dims: 1180591620717411303424 does not fit in 64 bits"):
        x.reshape(2**70)
    with pytest.raises(TypeError, match="layer_norm normalized_shape: expected an integer, got float"):
        tg.nn.functional.layer_norm(x, [4.0])
    with pytest.raises(TypeError, match="gradcheck: f must return a Var64 computed from its arguments, got ndarray"):
        tg.gradcheck(lambda a: np.ones(1), [np.ones(3)])
    with pytest.raises(tg.Error, match="gradcheck 'f': atol must be a finite number >= 0, got nan"):
        tg.gradcheck(lambda a: a.sum(), [np.ones(3)], atol=float("nan"))


def test_what_indexes_without_a_length_is_one_argument_and_a_non_parameter_is_a_type_error():
    # A 0-d array answers a[()] but has no len(): it is one dim, not a list of dims. A Var is a
    # sequence of its rows (len, iteration), each a Var, not an integer.
    tape = tg.Tape()
    x = tape.constant(np.arange(12, dtype=np.float32).reshape(3, 4))
    assert x.reshape(np.array(12)).shape == (12,)  # a 0-d integer array is one dim, as in numpy
    with pytest.raises(TypeError, match="Var.reshape dims: expected an integer, got Var"):
        x.reshape(x)
    with pytest.raises(TypeError, match=r"Var.reshape dims: expected an integer, got ndarray \(only integer scalar arrays"):
        x.reshape(np.array(12.0))
    with pytest.raises(TypeError, match="layer_norm normalized_shape: expected an integer or a sequence of integers, got Tape"):
        tg.nn.functional.layer_norm(x, tape)
    with pytest.raises(TypeError, match="Tape.param: expected a tapegrad.Parameter, got ndarray"):
        tape.param(np.ones(3, dtype=np.float32))
    with pytest.raises(TypeError, match=r"Tape64.param: got Parameter; a Tape64 has no parameters .* Tape64.constant\(array\)"):
        tg.Tape64().param(tg.Parameter("w", np.ones(3, dtype=np.float32)))
