"""The literal marks of a failure in a log, at the bottom of the diagnose layers.

normalize.py (rich's box), parse.py (the traceback header, frame lines, bare exception types)
and select.py (torchrun's failure table) read these; anchors.py searches a long log for them
before anything is normalised or parsed, so they live here, below all of those modules.
"""

from __future__ import annotations

HEADER = "Traceback (most recent call last)"
FRAME_MARK = 'File "'  # every frame line holds it
BARE_TYPE_SUFFIXES = ("Error", "Exception", "Exit", "Interrupt", "Failure", "Fault", "Timeout")
RICH_BAR = "│"
BOX_OPEN = ("╭", "┌")  # rich's box: rounded, or square where the console lacks rounded corners
BOX_CLOSE = ("╰", "└")
BOX_START = (*BOX_OPEN, *BOX_CLOSE, RICH_BAR)
ELASTIC_ROOT = "Root Cause (first observed failure)"
ELASTIC_FAILURES = "Failures:"
ELASTIC_MARKS = (ELASTIC_ROOT, ELASTIC_FAILURES)  # torchrun's failure table starts at one of these
