"""Store.write_once on a real directory and a real S3 server (seaweedfs): never replaced, a retry of the same bytes
is fine, and of writers racing for one key exactly one wins."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from composer_prime.store import Store


@pytest.fixture(params=["dir", pytest.param("s3", marks=pytest.mark.slow)])
def store(request, tmp_path, monkeypatch):
    if request.param == "dir":
        return Store(str(tmp_path / "store"))
    s3 = request.getfixturevalue("s3")
    for key, value in s3.env.items():
        monkeypatch.setenv(key, value)
    return Store(f"s3://run/{request.node.name}", s3.endpoint_url)


def test_write_once_never_replaces_and_a_retry_of_the_same_bytes_passes(store):
    store.write_once("round_0/a.sig", b"first")
    store.write_once("round_0/a.sig", b"first")  # a retry after a crash: nothing to do
    with pytest.raises(FileExistsError, match="round_0/a.sig was written before, with other bytes"):
        store.write_once("round_0/a.sig", b"second")
    with pytest.raises(FileExistsError):
        store.write_once("round_0/a.sig", b"firs")  # a prefix of what is there is other bytes too
    assert store.read_bytes("round_0/a.sig") == b"first"
    store.write_bytes("round_0/a.sig", b"replaced")  # write_bytes still replaces: only write_once refuses
    assert store.read_bytes("round_0/a.sig") == b"replaced"


def test_of_writers_racing_for_one_key_exactly_one_wins(store):
    outcomes: dict[int, str] = {}
    start = threading.Barrier(4)

    def write(i: int) -> None:
        start.wait()
        try:
            store.write_once("race", f"writer {i}".encode())
            outcomes[i] = "won"
        except FileExistsError:
            outcomes[i] = "refused"

    threads = [threading.Thread(target=write, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == 4 and len(winners) == 1
    assert store.read_bytes("race") == f"writer {winners[0]}".encode()
    if store.local:  # no temporary file left behind by the losers
        assert [p.name for p in Path(store.root).iterdir()] == ["race"]
