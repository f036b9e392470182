"""Owners: who may upload, their API tokens (kept only as SHA-256) and their signer keys."""
