from composer_prime.heldout.headline import headline


def _record(reward_start, reward_end, solved_start, solved_end, **extra):
    return {"eval/verdict": "exact_match", "eval/reward_start": reward_start, "eval/reward_end": reward_end,
            "eval/delta": reward_end - reward_start, "eval/solved_start": solved_start, "eval/solved_end": solved_end,
            "eval/solved_delta": solved_end - solved_start, **extra}


def test_the_task_verdict_leads_and_the_reward_stands_beside_it():
    lines = headline(_record(0.5, 0.8, 0.2, 0.6, **{"eval/greedy/solved_start": 0.25, "eval/greedy/solved_end": 0.7,
                                                     "eval/answer_len/ratio": 0.97}))
    assert lines == ["held-out exact_match 0.200 -> 0.600 (+0.400), greedy 0.250 -> 0.700; "
                     "reward 0.500 -> 0.800 (+0.300); answer length 0.97x target"]


def test_warns_when_the_reward_rose_while_the_task_verdict_fell():
    # The quickstart's old failure: partial credit 0.458 -> 0.801 while exact match went 0.004 -> 0.0.
    lines = headline(_record(0.458, 0.801, 0.004, 0.0, **{"eval/answer_len/ratio": 0.62}))
    assert len(lines) == 2 and lines[1].startswith("warning: held-out reward rose (+0.343) while exact_match fell")
    assert len(headline(_record(0.458, 0.401, 0.004, 0.0))) == 1  # both fell: a bad run, not a loophole
    assert len(headline(_record(0.458, 0.801, 0.004, 0.004))) == 1
