"""``python -m memorylab`` runs the command line."""

from memorylab.cli import main

raise SystemExit(main())
