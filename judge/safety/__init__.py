"""Safety before anything leaves the process: secrets redacted (``redact``, its own patterns in
``secret_patterns`` and ``secret_shapes``, gitleaks' rules as data in ``rules/``) and text that
addresses the judge flagged (``injection``: a lexicon in 20 languages, ``folding`` of disguised
text, a learned ``detector``)."""
