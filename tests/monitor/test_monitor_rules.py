"""The detectors are data: every rules/monitors file has its function and loads cleanly."""

from __future__ import annotations

import pytest

from traindoctor.model import FAILURE_MODES
from traindoctor.monitor import dist_report  # noqa: F401  (registers the distributed detectors, as the report does)
from traindoctor.monitor.detectors import DETECTORS
from traindoctor.monitor.rules import MonitorRuleError, load_monitor_rules


def test_every_detector_file_has_a_function_and_every_function_a_file():
    rules = load_monitor_rules()
    assert set(rules) == set(DETECTORS)
    for rule in rules.values():
        assert rule.mode in FAILURE_MODES and rule.titles


def test_a_broken_detector_file_is_a_clear_error(tmp_path):
    (tmp_path / "nan-onset.yaml").write_text("id: nan-onset\nmode: not-a-mode\nsources: [watch]\ntitle: ['x']\n")
    with pytest.raises(MonitorRuleError, match="unknown failure mode"):
        load_monitor_rules(str(tmp_path))
