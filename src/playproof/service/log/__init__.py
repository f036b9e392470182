"""The transparency log of the service: verified record digests as RFC 9162 leaves.

Every run the server verifies is appended as the next leaf; proof documents
carry the signed tree head and the run's inclusion proof, which
``playproof log verify`` checks offline with the log's public key.
"""
