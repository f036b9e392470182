"""The ``playproof`` command line."""

from playproof.cli import _calibrate as _calibrate  # registers calibrate, discover, explore, derive
from playproof.cli import _campaign as _campaign  # registers the campaign command
from playproof.cli import _corpus as _corpus  # registers corpus, grade and task commands
from playproof.cli import _demo as _demo  # registers the demo command
from playproof.cli import _log as _log  # registers log verify inclusion and consistency
from playproof.cli import _matrix as _matrix  # registers matrix run and matrix report
from playproof.cli import _service as _service  # registers serve, db, service, submit
from playproof.cli._app import EXIT_ERROR, EXIT_REJECTED, app, main

__all__ = ["EXIT_ERROR", "EXIT_REJECTED", "app", "main"]
