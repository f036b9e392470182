"""Leaderboards and challenges: verified, logged, canonical runs ranked.

Rank by earned over earnable (descending), then cost (ascending, unmeasured
cost after every measured one), then turns (ascending); equal keys share a
rank. A challenge (target, seed set, budget, submission window) counts a run
only if its seed is in the set, its budget is at most the challenge's and it
was uploaded inside the window.
"""
