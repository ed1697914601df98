"""The held-out files were written before any tuning of the memory against them, and are
frozen: a changed checksum means someone edited a held-out item (never change code or a
held-out file to make a held-out item pass; add a new item to the dev split instead)."""

from __future__ import annotations

import hashlib

from evals.dialogue import DIALOGUE_DIR
from evals.scenario import HELD_OUT_DIR

FROZEN = {
    "scenarios/heldout/heldout_diet_change_across_conversations.json": (
        "639d909be9844ca0917378ad5041dd27a9af310c201efbb77403f8180db69c91"
    ),
    "scenarios/heldout/heldout_driving_then_cooking_zh.json": (
        "880bd7ba86f7c45c38e38166df35d80654aca356e50fca1cfa6330deb5e6d805"
    ),
    "scenarios/heldout/heldout_secrets_forget_zh.json": (
        "8b0550cb9ff2c84d22a5b09cea2c66d387cf36a664543f1856823611e80ca1b3"
    ),
    "scenarios/heldout/heldout_two_neighbours.json": (
        "9aab2dd739edd9e40ef8743cf5ae3ec74a8978b005d537bd3db0ceb44d9f7d79"
    ),
    "scenarios/heldout/heldout_wedding_plan.json": (
        "e80cb9a74e0c04001693102adde244328479957c412928d198bf96e3e30f1916"
    ),
    "dialogues/heldout/colleagues_migration_zh.json": (
        "6aa8c1f7bdc6396d861996f64e6cb738476183f0f06fbccf252699011d74a62c"
    ),
    "dialogues/heldout/engineers_oncall_rotation.json": (
        "60fdfbb99782e6ecbf509523d2430c4551ec09356d3eb8830e2e754d40291ced"
    ),
    "dialogues/heldout/friends_pottery_porto.json": (
        "bbc2e6739558ae67f8bfdc5d282a266a68bee8ae5d78e96becc3e6e8d43e25d6"
    ),
}


def test_the_held_out_files_are_exactly_the_frozen_ones() -> None:
    root = HELD_OUT_DIR.parents[1]
    present = {
        str(path.relative_to(root))
        for path in [*HELD_OUT_DIR.glob("*.json"), *(DIALOGUE_DIR / "heldout").glob("*.json")]
    }
    assert present == set(FROZEN)
    for name, digest in FROZEN.items():
        assert hashlib.sha256((root / name).read_bytes()).hexdigest() == digest, name
