"""The wandb mirror of MetricsLogger, run for real in offline mode (no network): the run file it writes
holds the project, the run's group and name, the config and every logged value at its step."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

from composer_prime.errors import UserError
from composer_prime.utils.metrics import MetricsLogger, read_metrics

_BLOCK, _HEADER = 32768, 7


def run_records(path: Path) -> list:
    """The protobuf records of a `.wandb` run file: a 7-byte `:W&B` header, then a LevelDB-style log
    of 32 KiB blocks whose chunks (7-byte header: crc32, length, type) are whole records (type 1) or
    first/middle/last pieces of one (2/3/4); a block's tail shorter than a chunk header is padding."""
    from wandb.proto.wandb_internal_pb2 import Record

    data = path.read_bytes()
    assert data[:4] == b":W&B", data[:_HEADER]
    records, pieces, pos = [], [], _HEADER
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if left < _HEADER or (kind == 0 and length == 0):
            pos += left
            continue
        pieces.append(data[pos + _HEADER : pos + _HEADER + length])
        pos += _HEADER + length
        if kind in (1, 4):
            record = Record()
            record.ParseFromString(b"".join(pieces))
            records.append(record)
            pieces = []
    return records


def test_offline_run_files_hold_config_and_every_metric(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb", reason="wandb is an optional extra: uv sync --extra wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("WANDB_SILENT", "true")
    metrics = MetricsLogger(tmp_path / "run-7", "trainer", "composer-test", {"lr": 0.001})
    metrics.log(1, {"loss": 0.5, "reward/mean": 0.25, "note": "text"})
    metrics.log(2, {"loss": 0.125})
    metrics.close()
    # finish() can return before the wandb-core service has written the run file (1 run in ~10 here
    # held only its 7-byte header); teardown stops the service, as a process exit does, after it flushed.
    wandb.teardown()
    assert [r["loss"] for r in read_metrics(tmp_path / "run-7")] == [0.5, 0.125]  # the local file is unchanged

    [run_file] = (tmp_path / "wandb").glob("offline-run-*/run-*.wandb")
    records = run_records(run_file)
    kinds = [r.WhichOneof("record_type") for r in records]
    assert kinds.count("run") == 1, (kinds, run_file.stat().st_size)
    [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (run.project, run.run_group, run.display_name) == ("composer-test", "run-7", "run-7-trainer")
    assert {i.key: i.value_json for i in run.config.update}["lr"] == "0.001"
    history = [{i.key or "/".join(i.nested_key): i.value_json for i in r.history.item}
               for r in records if r.WhichOneof("record_type") == "history"]
    assert [(h["_step"], h["trainer/loss"]) for h in history] == [("1", "0.5"), ("2", "0.125")]
    assert history[0]["trainer/reward/mean"] == "0.25" and "trainer/note" not in history[0]  # numbers only
    assert any(r.WhichOneof("record_type") == "exit" for r in records)  # finished, not cut off


def test_wandb_project_without_wandb_installed_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # what `import wandb` meets when it is not installed
    expected = r"^log.wandb_project is 'p' but wandb is not installed: uv sync --extra wandb$"
    with pytest.raises(UserError, match=expected):
        MetricsLogger(tmp_path, "trainer", "p")
