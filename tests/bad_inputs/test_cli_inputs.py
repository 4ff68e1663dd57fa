"""Bad command lines: each exits 2 (or 1 for damaged files) with one message naming the
option or file, and never a traceback. Run in process (``phalanx.cli.main``); nothing launches."""

import pytest

import phalanx.cli

CASES = [
    # phalanx launch
    (
        ["launch", "-n", "1", "--port", "70000", "--", "true"],
        2,
        r"--port must be a TCP port in 1..65535, got 70000",
    ),
    (["launch", "-n", "1", "--port", "0", "--", "true"], 2, r"--port .* got 0"),
    (
        ["launch", "-n", "1", "--timeout", "-5", "--", "true"],
        2,
        r"--timeout must be a number of seconds > 0, got -5",
    ),
    (["launch", "-n", "1", "--timeout", "0", "--", "true"], 2, r"--timeout .* got 0"),
    (["launch", "-n", "1", "--timeout", "nan", "--", "true"], 2, r"--timeout .* got nan"),
    (
        ["launch", "-n", "1", "--grace", "-3", "--", "true"],
        2,
        r"--grace must be a number of seconds >= 0.*got -3",
    ),
    (
        ["launch", "-n", "1", "--", "no_such_program_xyz"],
        2,
        r"cannot run 'no_such_program_xyz': no such program on PATH",
    ),
    (
        ["launch", "-n", "1", "--", "missing_script.py"],
        2,
        r"cannot run 'missing_script.py': no such file",
    ),
    (
        ["launch", "-n", "1", "--", "./no/such/prog"],
        2,
        r"cannot run './no/such/prog': no such file",
    ),
    (["launch", "-n", "0", "--", "true"], 2, r"-n and --nnodes must be >= 1, got -n 0"),
    (
        [
            "launch",
            "-n",
            "1",
            "--nnodes",
            "2",
            "--node-rank",
            "2",
            "--coordinator",
            "h:1",
            "--",
            "true",
        ],
        2,
        r"--node-rank must be in \[0, 2\), got 2",
    ),
    (
        ["launch", "-n", "1", "--nnodes", "2", "--", "true"],
        2,
        r"--nnodes > 1 needs --coordinator HOST:PORT",
    ),
    (
        ["launch", "-n", "1", "--nnodes", "2", "--coordinator", "h:99999", "--", "true"],
        2,
        r"'h:99999' is 99999, outside 1..65535",
    ),
    (
        ["launch", "-n", "1", "--devices-per-process", "0", "--", "true"],
        2,
        r"--devices-per-process must be >= 1, got 0",
    ),
    (["launch", "-n", "1"], 2, r"nothing to run"),
    # phalanx demo: refused before any data is loaded or device is touched
    (["demo", "--epochs", "0"], 2, r"^phalanx demo: --epochs must be >= 1, got 0\.$"),
    (["demo", "--batch-size", "-8"], 2, r"^phalanx demo: --batch-size must be >= 1, got -8\.$"),
    (
        ["demo", "--steps-per-execution", "0"],
        2,
        r"^phalanx demo: --steps-per-execution must be >= 1, got 0\.$",
    ),
    (["demo", "--devices", "0"], 2, r"^phalanx demo: --devices must be >= 1, got 0\.$"),
    (["demo", "--verbose", "7"], 2, r"^phalanx demo: --verbose must be 0, 1 or 2, got 7\.$"),
]


@pytest.mark.parametrize(
    ("argv", "code", "match"),
    CASES,
    ids=[" ".join(c[0][:4]) + f" #{i}" for i, c in enumerate(CASES)],
)
def test_bad_command_line(argv, code, match, capsys, monkeypatch):
    import re

    monkeypatch.setattr(phalanx.cli, "set_cpu_device_count", lambda n: None)
    assert phalanx.cli.main(argv) == code
    out = capsys.readouterr()
    text = out.out + out.err
    assert re.search(match, text, re.MULTILINE), text
    assert "Traceback" not in text


def test_records_on_a_directory_and_a_negative_limit(tmp_path, capsys):
    from phalanx.data import TFRecordWriter

    with TFRecordWriter(tmp_path / "ok.tfrecord") as w:
        w.write(b"x")
    assert phalanx.cli.main(["records", "inspect", str(tmp_path)]) == 2
    assert "is a directory, not a TFRecord file" in capsys.readouterr().out
    assert phalanx.cli.main(["records", "verify", str(tmp_path)]) == 1
    assert "a directory, not a TFRecord file" in capsys.readouterr().out
    assert (
        phalanx.cli.main(["records", "inspect", str(tmp_path / "ok.tfrecord"), "--limit", "-1"])
        == 2
    )
    assert "--limit must be >= 0 (records to show), got -1" in capsys.readouterr().out
    assert phalanx.cli.main(["records", "verify", str(tmp_path / "nope.tfrecord")]) == 1
    assert "MISSING  " in capsys.readouterr().out
