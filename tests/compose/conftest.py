"""Fixtures of the docker-compose tests (helpers in compose_file.py beside this file)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
