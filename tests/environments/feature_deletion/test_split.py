"""The train/eval split is by source file: no eval task deletes a definition from a file a training task deletes from."""

from __future__ import annotations

from feature_deletion.task import load_rows
from feature_deletion.taskset import DEFAULT_TASKS, FeatureDeletionConfig, FeatureDeletionTaskset, file_split, split_of


def _files(rows) -> set[tuple[str, str]]:
    return {(r.package, t.file) for r in rows for t in r.deletion.targets}


def test_bundled_splits_share_no_source_file_and_both_have_tasks():
    rows, _ = load_rows(DEFAULT_TASKS)
    splits = {s: [r for r in rows if split_of(r) == s] for s in ("train", "eval")}
    assert splits["train"] and splits["eval"]
    assert not _files(splits["train"]) & _files(splits["eval"])
    # The old split hashed task ids: tasks deleting from one file landed on both sides. Every task is in one split now.
    assert sorted(r.id for s in splits.values() for r in s) == sorted(r.id for r in rows)
    # the task set serves its split's tasks (the bundled file read once more: one split is enough to tell)
    served = [t.row.id for t in FeatureDeletionTaskset(FeatureDeletionConfig(split="eval", isolation="none"))]
    assert served == [r.id for r in splits["eval"]]


def test_a_task_over_files_of_both_splits_is_in_neither():
    rows, _ = load_rows(DEFAULT_TASKS)
    row = rows[0]
    eval_file = next(f"m{i}.py" for i in range(1000) if file_split(row.package, f"m{i}.py") == "eval")
    train_file = next(f"m{i}.py" for i in range(1000) if file_split(row.package, f"m{i}.py") == "train")
    target = row.deletion.targets[0]

    def over(*files):
        targets = [target.model_copy(update={"file": f}) for f in files]
        return row.model_copy(update={"deletion": row.deletion.model_copy(update={"targets": targets})})

    assert split_of(over(eval_file)) == "eval" and split_of(over(train_file, train_file)) == "train"
    assert split_of(over(eval_file, train_file)) is None
