"""The science core (automated and fairness outside their django_app) has no import circle.

Checked on the import graph grimp builds (the library behind ``lint-imports``), function-level
imports included: before issue 18, detection <-> insightface_backend and
attack.recognizers <-> arcface, finetune were circles.
"""

import grimp
import networkx as nx


def science_graph() -> nx.DiGraph:
    graph = grimp.build_graph("automated", "fairness")
    science = {m for m in graph.modules if ".django_app" not in m}
    edges = nx.DiGraph()
    edges.add_nodes_from(science)
    for module in science:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported in science:
                edges.add_edge(module, imported)
    return edges


def test_the_science_core_has_no_import_circle():
    graph = science_graph()
    assert "automated.face_boxes" in graph and "automated.attack.embedding" in graph
    circles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert circles == []


def test_shared_base_modules_are_leaves_below_their_registries():
    graph = science_graph()
    assert graph.has_edge("automated.detection", "automated.face_boxes")
    assert graph.has_edge("automated.insightface_backend", "automated.face_boxes")
    assert not nx.has_path(graph, "automated.insightface_backend", "automated.detection")
    assert graph.has_edge("automated.attack.recognizers", "automated.attack.arcface")
    assert not nx.has_path(graph, "automated.attack.arcface", "automated.attack.recognizers")
    assert not nx.has_path(graph, "automated.attack.finetune", "automated.attack.recognizers")
