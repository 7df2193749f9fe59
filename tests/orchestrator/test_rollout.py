from composer_prime.rollout.single_turn import prompt_index, request_seed


def test_prompts_depend_only_on_seed_and_step():
    first = [prompt_index(0, 3, slot, 0, 8, 100) for slot in range(8)]
    assert first == [prompt_index(0, 3, slot, 0, 8, 100) for slot in range(8)]
    assert first != [prompt_index(0, 4, slot, 0, 8, 100) for slot in range(8)]
    assert first != [prompt_index(1, 3, slot, 0, 8, 100) for slot in range(8)]


def test_a_step_uses_distinct_prompts_until_the_split_runs_out():
    draws = [prompt_index(5, 2, slot, attempt, 4, 20) for attempt in range(5) for slot in range(4)]
    assert sorted(draws) == list(range(20)), "first and re-drawn prompts of one step should not repeat"
    assert prompt_index(5, 2, 1, 5, 4, 20) == prompt_index(5, 2, 1, 0, 4, 20)  # wraps after the whole split


def test_request_seeds_are_stable_and_distinct():
    assert request_seed(0, 1, 2) == request_seed(0, 1, 2)
    assert len({request_seed(0, step, slot) for step in range(10) for slot in range(10)}) == 100
    assert all(0 <= request_seed(s) < 2**31 for s in range(50))
