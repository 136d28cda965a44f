"""JSON conversion of analysis values: the one implementation of the project.

Reports and stored results hold numpy scalars, NaN and pandas' ``NA``; JSON has none of
them. Django-free and a leaf.
"""

from __future__ import annotations

import sys


def jsonable(value):
    """``value`` with numpy scalars as Python numbers and NaN / ``pd.NA`` as None.

    Dicts, lists and tuples are converted recursively (tuples become lists); anything
    with numpy's ``.item()`` (``np.int64``, ``np.float32``, ``np.bool_``, 0-d arrays) is
    replaced by its Python value; everything else is returned unchanged (strings, None,
    Python numbers).

    Parameters
    ----------
    value : object

    Returns
    -------
    object
        Accepted by ``json.dumps`` when ``value`` holds only numbers, strings, None,
        booleans and containers of them. Infinite floats stay (``json.dumps`` writes
        ``Infinity``).
    """
    # <NA>, NaN -> null. A value is pandas' NA only if pandas is loaded: this module does not
    # import it (slow to import, and Django start-up imports this module). getattr: while
    # another thread imports pandas, it is in sys.modules before it defines NA.
    na = getattr(sys.modules.get("pandas"), "NA", None)
    if (na is not None and value is na) or (isinstance(value, float) and value != value):
        return None
    if hasattr(value, "item"):
        return jsonable(value.item())
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
