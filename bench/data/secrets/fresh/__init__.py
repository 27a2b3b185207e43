"""Makes the generator here the module ``fresh.make_set`` for mypy, apart from ../make_set.py."""
