"""`python -m mnemo` runs the command line.  Never compiled (mypyc cannot compile this file's
`if __name__ == "__main__"` idiom, and it has no work to speed up)."""

from mnemo.cli import main

raise SystemExit(main())
