"""Signed corpus grade records: uploaded, signature-checked at once, re-verified on the server."""
