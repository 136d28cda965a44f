"""Signals the catalogue sends, so other apps follow its changes without evalsite importing them.

Receivers are connected in the receiving app's ``AppConfig.ready()`` (e.g.
``trials.apps.TrialsConfig``: new rating items for a replaced masked video).
"""

from django.dispatch import Signal

#: Sent (``sender=MaskedVideo``, ``old=``, ``new=``) inside the transaction that replaces a
#: masked video: ``old`` is now superseded (kept with its responses and scores), ``new``
#: is the current masked video of the same (submission, source video).
masked_video_replaced = Signal()

#: Sent (``sender=SourceVideo``, ``source=``) inside the transaction that replaces the clear
#: file of ``source`` (``services.replace_source_video``; ``source.file_replaced_at`` is set):
#: what was measured on the old clear file is kept but no longer counts.
source_video_replaced = Signal()

#: Sent (``sender=GalleryImage``, ``image=``) inside the transaction that saves a new file in
#: place of a gallery still's (the admin's change form or inline): what was made of the old
#: still for raters (``trials``: its crop and attention-check probe) is made again.
gallery_image_replaced = Signal()
