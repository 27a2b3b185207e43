"""Makes the generator here the module ``fresh2.make_set`` for mypy, apart from ../make_set.py."""
