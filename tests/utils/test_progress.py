"""step_progress: rich's bar on a terminal; elsewhere plain lines at the interval and the final state."""

import io

import pytest
from rich.console import Console

from composer_prime.utils.progress import PlainProgress, duration, step_progress


class Clock:
    """Time that moves only when the test says so: which updates print is then deterministic."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def piped(clock: Clock) -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, get_time=clock, width=40), out  # narrow: plain lines must not wrap


def test_plain_lines_at_the_interval_then_the_final_state():
    clock = Clock()
    console, out = piped(clock)
    with step_progress("rl", console, interval_s=30.0) as progress:
        assert isinstance(progress, PlainProgress)
        task = progress.add_task("steps", total=800, info="starting")
        for now, step in [(10.0, 10), (29.9, 20), (92.0, 120), (100.0, 130), (125.0, 150), (130.0, 170)]:
            clock.now = now
            progress.update(task, completed=step, info=f"reward 0.512  loss +{step / 1e5:.4f}")
        clock.now = 131.0
    assert out.getvalue().splitlines() == [
        "rl: step 120/800  reward 0.512  loss +0.0012  elapsed 1m32s",  # first update 30 s or more after the start
        "rl: step 150/800  reward 0.512  loss +0.0015  elapsed 2m05s",  # then 30 s or more after that line
        "rl: step 170/800  reward 0.512  loss +0.0017  elapsed 2m11s",  # on stop, whatever the interval
    ]


def test_a_failure_still_prints_where_the_run_stopped():
    clock = Clock()
    console, out = piped(clock)
    with pytest.raises(RuntimeError), step_progress("sft", console) as progress:
        task = progress.add_task("sft", total=4, info="")
        progress.update(task, advance=1, info="loss 2.000")
        raise RuntimeError("out of memory")
    assert out.getvalue().splitlines() == ["sft: step 1/4  loss 2.000  elapsed 0s"]


def test_a_terminal_gets_the_rich_bar_and_disabled_prints_nothing():
    terminal = Console(file=io.StringIO(), force_terminal=True)
    assert not isinstance(step_progress("rl", terminal), PlainProgress)
    console, out = piped(Clock())
    with step_progress("rl", console, enabled=False) as progress:
        progress.update(progress.add_task("steps", total=3, info=""), completed=3)
    assert out.getvalue() == ""


@pytest.mark.parametrize("seconds, text", [(0.4, "0s"), (59.9, "59s"), (92, "1m32s"), (3599, "59m59s"),
                                           (7500, "2h05m")])
def test_duration(seconds, text):
    assert duration(seconds) == text
