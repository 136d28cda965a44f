"""Time limits of video probes and transcodes: their environment variables and defaults, declared once.

A damaged or hostile file can make ffmpeg (or OpenCV's ffmpeg backend) decode for hours;
every call gets a limit (:func:`automated.video.probe_timeout_s`,
:func:`automated.video.transcode_timeout_s`). Django-free and a leaf (no cv2, no numpy):
``evalsite/conf.py`` declares these settings with these names and defaults (documented on
the configuration page), and the site passes its settings; library users may set the
variables.
"""

from __future__ import annotations

#: Seconds one probe (opening, counting or decoding frames) may take, and its variable.
PROBE_TIMEOUT_ENV, DEFAULT_PROBE_TIMEOUT_S = "DEID_FFMPEG_TIMEOUT_S", 300
#: Seconds one browser-copy transcode may take, and its variable.
TRANSCODE_TIMEOUT_ENV, DEFAULT_TRANSCODE_TIMEOUT_S = "DEID_TRANSCODE_TIMEOUT_S", 1800
