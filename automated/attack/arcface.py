"""Frozen ArcFace embedding + trained classifier: the InsightFace attack recognizers.

The pretrained ArcFace network of an InsightFace model pack (``insightface_backend``,
embedder ``"arcface"``: 5-point alignment by the pack's SCRFD, 112x112 chips, unit-length
512-D embeddings), frozen, with a classifier trained on the attacker's crops: the
"pretrained embedding + trained classifier" family of seeds/000_0b74979cb8a3f1c3.txt,
section 5.5 (ArcFace among its recognizers), beside dlib's ResNet (``dlib_svm``,
``dlib_knn``). Embeddings are cached per embedder key and crop content
(``embedding.EMBEDDING_CACHE``).

Needs the default pack (``insightface_backend.DEFAULT_PACK``) under ``$DEID_MODELS_DIR``;
without it fitting raises ``FileNotFoundError`` naming the folder (docs/automated/insightface.md, "InsightFace
model packs").
"""

from __future__ import annotations

from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from .embedding import DlibEmbedding

#: Registry name of the embedder (``recognition.EMBEDDERS``).
EMBEDDER = "arcface"


def arcface_svm():
    """Frozen ArcFace embedding, standardised, RBF SVM (C=10), as ``recognizers.dlib_svm``."""
    return make_pipeline(DlibEmbedding(EMBEDDER), StandardScaler(), SVC(kernel="rbf", C=10.0, gamma="scale"))


def arcface_knn():
    """Frozen ArcFace embedding, 1-nearest neighbour in L2 of unit vectors (= cosine ranking)."""
    return make_pipeline(DlibEmbedding(EMBEDDER), KNeighborsClassifier(n_neighbors=1))
