"""Runs: uploaded signed records, their verification status and the stored report."""
