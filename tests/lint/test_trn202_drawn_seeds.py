"""TRN202 precision: a draw whose value becomes the seed leaves a seeded run reproducible (PixArt-alpha
app/app_controlnet.py:165 and scripts/interface.py:51, ecosystem dev, judged fp). A "randomize seed" option
picks the seed with `random.randint` and the program seeds torch with it (directly, through a function that
returns it, or through an in-file helper whose parameter it seeds with), recording it at most (printed,
returned beside the results): the run is fixed by that seed. Look-alikes stay found: a drawn value also
computed with, another draw next to the seed draw, a returned draw whose caller does not seed with it."""

from __future__ import annotations

from project_helpers import places_found_by_check, write_project

# -- the seed is drawn, then used to seed ------------------------------------------------------------------

RANDOMIZED = """\
    import random

    import torch

    MAX_SEED = 2**31 - 1


    def choose_seed(seed, randomize):
        if randomize:
            seed = random.randint(0, MAX_SEED)
        return seed


    def seed_torch(value):
        torch.manual_seed(value)


    def generate(prompt, seed=0, randomize=False):
        seed = int(choose_seed(seed, randomize))
        {seeding}
        print(f"seed: {{seed}}")
        {extra}
        return torch.randn(4), seed
"""


def _found(tmp_path, source):
    write_project(tmp_path, {"app.py": source}, dedent=True)
    return places_found_by_check(tmp_path, "TRN202", fields=("file", "line"))


def test_a_drawn_seed_that_seeds_torch_is_quiet(tmp_path):
    assert _found(tmp_path, RANDOMIZED.format(seeding="torch.manual_seed(seed)", extra="pass")) == []


def test_a_drawn_seed_handed_to_an_in_file_seeding_function_is_quiet(tmp_path):
    assert _found(tmp_path, RANDOMIZED.format(seeding="seed_torch(seed)", extra="pass")) == []


def test_a_seed_drawn_for_each_trial_is_quiet(tmp_path):
    source = """\
        import random

        import torch


        def main(args):
            for trial in range(args.trials):
                seed = args.seed if args.seed is not None else random.randint(0, 10**6)
                torch.manual_seed(seed)
                print(trial, seed, torch.randn(2))
    """
    assert _found(tmp_path, source) == []


def test_a_drawn_seed_also_computed_with_is_found(tmp_path):
    found = _found(tmp_path, RANDOMIZED.format(seeding="torch.manual_seed(seed)", extra="shift = seed % 7"))
    assert found == [("app.py", 15)]


def test_another_draw_beside_the_drawn_seed_is_found(tmp_path):
    found = _found(tmp_path, RANDOMIZED.format(seeding="torch.manual_seed(seed)", extra="crop = random.random()"))
    assert found == [("app.py", 15)]


def test_a_returned_draw_that_the_caller_does_not_seed_with_is_found(tmp_path):
    source = RANDOMIZED.format(seeding="torch.manual_seed(0)", extra="pass").replace(
        "print(f\"seed: {seed}\")", "noise = torch.full((4,), float(seed))")
    assert _found(tmp_path, source) == [("app.py", 15)]
