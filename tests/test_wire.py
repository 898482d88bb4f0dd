"""Messages between the harness's processes: whatever a runner sends is checked, and a bad message is a reason,
never an exception of another kind."""
import json
import os
import random

import pytest

from evolve.harness.shared.protocol import MEASURER, RUNNER
from evolve.harness.shared.wire import Closed, Link, Malformed, check, parse

GOOD_OUTPUTS = {"kind": "outputs", "call": 3, "outputs": [[{"handle": "ab" * 64, "offset": 0, "nbytes": 28,
                                                             "shape": [1, 7], "dtype": "float32"}]]}


def test_a_well_formed_message_passes():
    assert parse(json.dumps(GOOD_OUTPUTS).encode(), RUNNER) == GOOD_OUTPUTS


def test_an_output_that_is_a_handed_out_buffer_names_its_input():
    """The GPU runner's description of an output the task handed out (GPU MODE's pmpp_v2): read where it lies."""
    handed = {"kind": "outputs", "call": 3, "outputs": [[{"handle": "", "offset": 0, "nbytes": 28, "shape": [1, 7],
                                                          "dtype": "float32", "input": 1}]]}
    assert parse(json.dumps(handed).encode(), RUNNER) == handed
    for bad in ({"input": "1"}, {"input": 1, "owner": 2}, {"pointer": 5}):
        row = {**handed["outputs"][0][0], **bad}
        with pytest.raises(Malformed, match=r"outputs\[0\]\[0\]"):
            parse(json.dumps({**handed, "outputs": [[row]]}).encode(), RUNNER)


@pytest.mark.parametrize("line, fragment", [
    (b"not json", "not JSON"),
    (b"[1, 2]", "an object with a string 'kind'"),
    (b'{"kind": 5}', "an object with a string 'kind'"),
    (b'{"kind": "rung"}', "unknown message kind"),
    (b'{"kind": "outputs", "call": 1}', "missing field 'outputs'"),
    (b'{"kind": "checked", "call": 1, "extra": 2}', "unexpected field 'extra'"),
    (b'{"kind": "checked", "call": "1"}', "expected an integer"),
    (b'{"kind": "checked", "call": true}', "expected an integer"),
    (b'{"kind": "checked", "call": 1e300}', "expected an integer"),
    (b'{"kind": "loaded", "seconds": NaN}', "expected a finite number"),
    (b'{"kind": "outputs", "call": 1, "outputs": [[{"handle": 1}]]}', "outputs[0][0]"),
    (b'{"kind": "failed", "reason": ["x"], "log": "", "seconds": 0}', "failed.reason: expected a string"),
    (b'{"kind": "outputs", "call": 1, "outputs": ' + b"[" * 50 + b"]" * 50 + b"}", "outputs"),
])
def test_malformed_messages_are_reasons(line, fragment):
    with pytest.raises(Malformed) as exc:
        parse(line, RUNNER)
    assert fragment in str(exc.value)


def test_random_bytes_never_raise_anything_but_malformed():
    rng = random.Random(7)
    pieces = [b"{", b"}", b"[", b"]", b'"kind"', b":", b",", b'"outputs"', b"1", b"null", b'"x"', b"\xff", b"1e999"]
    for _ in range(3000):
        line = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        try:
            parse(line, RUNNER)
        except Malformed:
            pass


def test_the_measurer_schema_checks_nested_figures():
    good = {"kind": "peaks", "key": "k", "cached": False, "bandwidth": 4e12,
            "flops": {"bfloat16": 7e14, "float32": 5e13, "float16": 7e14}}
    assert check(good, MEASURER["peaks"], "peaks") == good
    with pytest.raises(Malformed, match="flops"):
        check({**good, "flops": {"bfloat16": "fast"}}, MEASURER["peaks"], "peaks")


def test_a_link_reports_a_closed_pipe_and_an_overlong_line():
    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    a, b = Link(r1, w2, RUNNER), Link(r2, w1, None)
    b.send({"kind": "checked", "call": 1})
    assert a.recv(timeout_s=5) == {"kind": "checked", "call": 1}
    with pytest.raises(Closed, match="no message within"):
        a.recv(timeout_s=0.05)
    os.close(w1)
    with pytest.raises(Closed, match="closed"):
        a.recv(timeout_s=5)
    r3, w3 = os.pipe()
    reader = Link(r3, w2, RUNNER)
    os.set_blocking(w3, False)
    try:
        while True:
            os.write(w3, b"x" * 65536)
    except BlockingIOError:
        pass
    import evolve.harness.shared.wire as wire

    limit, wire.MAX_LINE = wire.MAX_LINE, 1000
    try:
        with pytest.raises(Malformed, match="longer than"):
            reader.recv(timeout_s=5)
    finally:
        wire.MAX_LINE = limit


def test_ready_says_whether_a_whole_message_is_there_without_taking_it():
    import threading

    r1, w1 = os.pipe()
    r2, w2 = os.pipe()
    a, b = Link(r1, w2, RUNNER), Link(r2, w1, None)
    assert a.ready(0.05) is False  # nothing sent
    os.write(w1, b'{"kind": "checked",')  # half a message is not one
    assert a.ready(0.05) is False
    later = threading.Timer(0.2, lambda: os.write(w1, b' "call": 2}\n'))
    later.start()
    assert a.ready(5.0) is True  # the rest arrives while it waits
    later.join()
    assert a.ready(0.0) is True  # still there: ready reads it in but leaves it for recv
    assert a.recv(timeout_s=1) == {"kind": "checked", "call": 2}
    assert a.ready(0.05) is False
    b.send({"kind": "checked", "call": 3})
    os.close(w1)
    assert a.ready(1.0) is True  # a message sent before the close is still delivered
    assert a.recv(timeout_s=1) == {"kind": "checked", "call": 3}
    with pytest.raises(Closed, match="closed"):
        a.ready(1.0)
