"""Hooks of the `weights-only-load` kind (rules/signatures/*.yaml with kind: weights-only-load).

`derive(facts, exception_text)`: facts computed from the ones the signature's regexes extracted.
"""

from __future__ import annotations

from typing import Any


def derive(facts: dict[str, Any], text: str) -> dict[str, Any]:
    """The class named in the message, spelled so that it can be allow-listed."""
    name = str(facts.get("global_name") or "").rstrip(".")
    if not name:
        return {}
    module, _, short = name.rpartition(".")
    if not module or module == "__main__":
        # Saved from a script: the loader needs its own class of that name in scope.
        return {"global_name": name, "safe_name": short or name, "from_main": module == "__main__",
                "import_line": f"from my_training_script import {short or name}  # wherever {short or name} is defined now"}
    top = module.split(".")[0]
    return {"global_name": name, "safe_name": name, "import_line": f"import {module}" if module != top else f"import {top}"}
