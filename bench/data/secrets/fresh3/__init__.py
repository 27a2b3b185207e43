"""Makes the generator here the module ``fresh3.make_set`` for mypy, apart from ../make_set.py."""
