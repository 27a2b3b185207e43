"""Makes the generator here the module ``fresh4.make_set`` for mypy, apart from ../make_set.py."""
