"""The HTTP service: a FastAPI app (``judge.api.app.create_app``) serving the JSON API under
``/v1`` and the server-rendered review page under ``/review``.

Importing this package is cheap: FastAPI is imported only by ``judge.api.app``, so the client
(``judge.api.client``) and the key commands load neither FastAPI nor Starlette.
"""
