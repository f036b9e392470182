"""The web pages of the proof service: targets, leaderboards, proof cards, a replay viewer.

Server-rendered Jinja2 templates (autoescaped), one vendored script library
(htmx, pinned by digest in ``static/vendor/SHA256SUMS``) and a small viewer
script; every page that shows a proof reads fine without JavaScript. Replay
frames are regenerated on the server from a record's inputs and cached
under the service's data folder.
"""

from playproof.service.web.rendering import install_web

__all__ = ["install_web"]
