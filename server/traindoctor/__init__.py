"""traindoctor: finds and fixes the bugs that ruin PyTorch training runs."""

__version__ = "0.1.0"
