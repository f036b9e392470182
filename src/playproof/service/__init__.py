"""The proof service: accept signed run records, replay them, serve public proof documents.

Split by domain, each folder holding its tables (``models.py``), its
operations (``services.py``) and its thin HTTP routes (``routes.py``):
``owners`` (owners, API tokens kept as hashes, signer keys), ``runs``
(uploaded envelopes, their verification status and report), ``checks``
(named check groups recomputed from stored evidence), ``proofs`` (the public
proof document) and ``log`` (the seam where verified records enter the
transparency log). Needs the ``server`` extra (FastAPI, SQLAlchemy, Alembic).
"""
