"""Gait-style recognition on skeleton time series (Django-free).

Implements the gait part of seeds/000_0b74979cb8a3f1c3.txt ("A False Sense of Privacy"):
sequences resampled to 100 frames (section 5.3), the "flatten" and "simple" feature vectors
with SVM, random forest and kNN (section 5.5), and the simple gait anonymizations Keep(legs),
Keep(head), Noise(3/10/100) and Motion Extraction (section 5.6.2). The estimators take
arrays of skeleton sequences of shape ``(n_sequences, n_frames, n_joints, 3)`` and plug
into ``automated.attack`` as recognizers.

Modules: ``layouts`` (joint names and groups of each skeleton), ``loaders`` (University of
Calgary Kinect walks, CMU mocap walks), ``acclaim`` (ASF/AMC parser and forward kinematics),
``pose`` (MediaPipe pose time series from video, cached), ``sequences`` (resampling,
centring), ``features`` (feature transformers, recognizer factories, selection features),
``anonymize``, ``suite`` (``AttackData`` of clear vs anonymized walks).
"""
