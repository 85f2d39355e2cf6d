"""Shared test set-up: this folder is on sys.path (pytest's rootdir conftest
rule), so helpers used by several test folders live here (e.g. editor_dap.py)."""
