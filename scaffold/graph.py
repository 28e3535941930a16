"""The audit loop as a LangGraph StateGraph. This file only wires nodes and edges:

    START -> auditor -> tools -> target -> auditor -> ... -> END

One conditional edge, after the auditor: END when the audit is over, `tools` while the
auditor's turn has calls left, `auditor` again when it called no tool. The tools and
target nodes pass (no update) when they have nothing to do, so the other edges are
plain: LangGraph spends more per step on conditional edges than on plain ones.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from scaffold.nodes import auditor_node, target_node, tools_node, turn_has_work
from scaffold.state import AuditContext, AuditState


async def _after_auditor(state: AuditState) -> str:
    # async on purpose: LangGraph runs a sync router in a worker thread, one thread hop
    # (and a wait for the GIL) per turn, which was the gap between CPU and wall time.
    cursor = state["cursor"]
    if cursor.get("done"):
        return END
    return "tools" if turn_has_work(cursor) else "auditor"


def build_audit_graph(checkpointer: Any = None) -> Any:
    """Compile the audit graph, with an optional LangGraph checkpointer for resume."""
    graph = StateGraph(AuditState, context_schema=AuditContext)
    graph.add_node("auditor", auditor_node)
    graph.add_node("tools", tools_node)
    graph.add_node("target", target_node)
    graph.add_edge(START, "auditor")
    graph.add_conditional_edges("auditor", _after_auditor, ["tools", "auditor", END])
    graph.add_edge("tools", "target")
    graph.add_edge("target", "auditor")
    return graph.compile(checkpointer=checkpointer)
